"""The C allocator's part in a cold build's peak memory (ADR-0018).

glibc's ``malloc`` serves a block above its mmap threshold (128 KiB at start) with its own
mapping, returned to the system when freed, but it raises that threshold to the size of
every such block freed (up to 32 MiB). A cold build grows dozens of arrays of 0.1–2 MB
step by step and frees each old copy, so after the first few frees the new copies come from
the heap, and each old one stays behind as a hole the later, larger copies do not fit: at
100k entries ~12 MB of the peak was free heap. Fixing the threshold (which turns the raising
off) keeps large arrays in mappings of their own: freed at once, and grown by ``mremap``
without a copy.
"""

from __future__ import annotations

import sys

MMAP_THRESHOLD_BYTES = 128 * 1024  # glibc's own starting value
_M_MMAP_THRESHOLD = -3  # mallopt's parameter number (malloc.h)
_done = False


def map_large_blocks() -> bool:
    """Fix glibc's mmap threshold for this process (once; elsewhere nothing happens).
    Returns whether it was set."""
    global _done
    if _done or not sys.platform.startswith("linux"):
        return _done
    _done = True
    import ctypes  # only here: most processes never scan cold

    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (AttributeError, OSError):  # not glibc (musl has a no-op one)
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES))
