"""The C allocator's part in a cold build's peak memory (ADR-0018).

glibc's ``malloc`` serves a block above its mmap threshold (128 KiB at start) with its own
mapping, returned to the system when freed, but it raises that threshold to the size of
every such block freed (up to 32 MiB). A cold build grows dozens of arrays of 0.1–2 MB
step by step and frees each old copy, so after the first few frees the new copies come from
the heap, and each old one stays behind as a hole the later, larger copies do not fit: at
100k entries 10–14 MB of the peak was free heap. During a cold build the threshold is held
at 128 KiB, so large arrays get mappings of their own, freed at once and grown by ``mremap``
without a copy. Afterwards it is set where glibc's own rule ends up (32 MiB, and trimming at
twice that): a query's temporary arrays (0.8 MB of scores at 100k entries) then reuse the
heap instead of mapping and faulting in fresh pages each time, which tripled the time of a
raw BM25 top 10 at 100k (0.24 → 0.73 ms).

Free heap is also handed back after the daemon's initial scan and after each snapshot write
(``release_free_heap``): left alone it stays resident for the daemon's whole life.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager

BUILD_MMAP_THRESHOLD = 128 * 1024  # glibc's own starting value
AFTER_MMAP_THRESHOLD = 32 * 1024 * 1024  # glibc's DEFAULT_MMAP_THRESHOLD_MAX (64-bit)
_M_TRIM_THRESHOLD = -1  # mallopt's parameter numbers (malloc.h)
_M_MMAP_THRESHOLD = -3
_LIBC: dict[str, Callable[..., int] | None] = {}  # looked up once


def _libc(name: str, nargs: int) -> Callable[..., int] | None:
    """glibc's ``mallopt`` or ``malloc_trim``; None elsewhere (not Linux, or not glibc)."""
    if name not in _LIBC:
        _LIBC[name] = None
        if sys.platform.startswith("linux"):
            import ctypes  # only here: most processes never build cold

            try:
                func = getattr(ctypes.CDLL(None), name)
            except (AttributeError, OSError):  # not glibc (musl's mallopt is a no-op anyway)
                return None
            func.argtypes, func.restype = [ctypes.c_int] * nargs, ctypes.c_int
            _LIBC[name] = func
    return _LIBC[name]


def _mallopt() -> Callable[[int, int], int] | None:
    return _libc("mallopt", 2)


def release_free_heap() -> None:
    """Give the heap's free pages back to the system (glibc's ``malloc_trim``; ~1 ms).

    After a burst of large temporary buffers (writing the index snapshot: ~50 MB of sections
    at 100k entries, streamed in pieces of ~1 MB) the freed heap stays the process's, and a
    daemon's resident memory would stay that much higher for good."""
    trim = _libc("malloc_trim", 1)
    if trim is not None:
        trim(0)


@contextmanager
def large_blocks_mapped(active: bool = True) -> Iterator[None]:
    """While inside (and ``active``), large blocks get mappings of their own (glibc only;
    elsewhere nothing changes)."""
    mallopt = _mallopt() if active else None
    if mallopt is None:
        yield
        return
    mallopt(_M_MMAP_THRESHOLD, BUILD_MMAP_THRESHOLD)
    try:
        yield
    finally:
        mallopt(_M_MMAP_THRESHOLD, AFTER_MMAP_THRESHOLD)
        mallopt(_M_TRIM_THRESHOLD, 2 * AFTER_MMAP_THRESHOLD)
