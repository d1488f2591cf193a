"""A software prefetch for compiled code: ``prefetch(array, i)`` asks the CPU to bring element i
of a 1-d array (row i of a 2-d one) into the cache, without waiting for it and without any effect
on results.

Why: the array model's kernel spends most of its time waiting for memory. Each request reads
records at random places of tables larger than the CPU caches (cache units, SSD cache chunks and
slots, their LRU neighbours), and each of those loads depends on the previous one, so the CPU
cannot overlap them. The addresses of later requests are known in advance (the chunk's page
list), and so are those of the next unit a RAID group's flusher will write: prefetching them a
few requests early lets their loads overlap the current request's work (measured: docs/design/array-kernel-speed.md). numba has no prefetch; this emits LLVM's ``llvm.prefetch`` (read,
high locality, data cache), which compiles to one ``prefetcht0`` instruction. An index out of
range is the caller's error (no bounds check; a prefetch of a bad address does not fault).
"""

from __future__ import annotations

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic


@intrinsic
def prefetch(typingctx, arr, i):
    """Prefetch ``arr[i]`` (a 1-d array; a 2-d one: the start of row i; an integer index)."""
    if not (isinstance(arr, types.Array) and arr.ndim in (1, 2) and isinstance(i, types.Integer)):
        return None

    def codegen(context, builder, signature, args):
        aryty, ity = signature.args
        ary = context.make_array(aryty)(context, builder, args[0])
        idx = [context.cast(builder, args[1], ity, types.intp)] + [context.get_constant(types.intp, 0)] * (aryty.ndim - 1)
        ptr = cgutils.get_item_pointer(context, builder, aryty, ary, idx, wraparound=False)
        i32 = ir.IntType(32)
        addr = builder.bitcast(ptr, ir.IntType(8).as_pointer())
        fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(ir.VoidType(), [addr.type, i32, i32, i32]),
                                            "llvm.prefetch.p0")
        builder.call(fn, [addr, ir.Constant(i32, 0), ir.Constant(i32, 3), ir.Constant(i32, 1)])
        return context.get_dummy_value()

    return types.void(arr, i), codegen
