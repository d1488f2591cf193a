"""Intrusive doubly linked lists over dense ids, held in plain arrays: ``prev[i]``, ``nxt[i]``
(-1: none) and ``ends`` = [head, tail]. One implementation for every list whose links are arrays
of their own (the SSD cache's LRU and dirty lists); numba cannot take a record field's name as
a parameter, so lists linked through record fields (the DRAM cache's) keep their own code."""

from __future__ import annotations

from replay.jit import kernel

HEAD, TAIL = 0, 1


@kernel
def unlink(prev, nxt, ends, i):
    p, n = prev[i], nxt[i]
    if p >= 0:
        nxt[p] = n
    else:
        ends[HEAD] = n
    if n >= 0:
        prev[n] = p
    else:
        ends[TAIL] = p
    prev[i] = -1
    nxt[i] = -1


@kernel
def push_front(prev, nxt, ends, i):
    h = ends[HEAD]
    prev[i] = -1
    nxt[i] = h
    if h >= 0:
        prev[h] = i
    else:
        ends[TAIL] = i
    ends[HEAD] = i


@kernel
def push_back(prev, nxt, ends, i):
    t = ends[TAIL]
    nxt[i] = -1
    prev[i] = t
    if t >= 0:
        nxt[t] = i
    else:
        ends[HEAD] = i
    ends[TAIL] = i
