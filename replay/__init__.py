"""Replay engine: page mapping, dense ids, compiled cache kernels, hit-ratio curves, array models."""
