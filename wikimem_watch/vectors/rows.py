"""Where a ``VectorMatrix``'s float32 rows live: anonymous memory, or a private scratch file.

A large matrix (``MAP_MIN_BYTES`` and up) is kept in a scratch file of the cache directory
that has no name (``O_TMPFILE``, or created and unlinked at once), mapped shared and
writable, so its rows are page cache, not the process's anonymous heap: pages the process
has touched count in its RSS only until ``release`` drops them from its page tables (the
data stays in the page cache and the file). Growing the matrix extends the file
(``posix_fallocate``: blocks are reserved up front, so a full disk is an ``OSError`` here,
never a SIGBUS on a later write through the map) and maps it again; the rows are not copied.

Why a private file and not a map of the cache's own ``.npy`` files: a sync tool may
truncate or rewrite those in place, and touching a page of a mapped file past its new end
kills the process with SIGBUS, which Python cannot catch (ADR-0021). Nothing else can
open, truncate or rewrite a file without a name. Small matrices, a cache directory that
does not exist and a failure to make the file keep the rows in anonymous memory, as before.
"""

from __future__ import annotations

import contextlib
import logging
import mmap
import os
import tempfile
import weakref
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    FloatMatrix = npt.NDArray[np.float32]
    IntArray = npt.NDArray[np.int64]

__all__ = ["MAP_MIN_BYTES", "RowStore"]

log = logging.getLogger(__name__)

MAP_MIN_BYTES = 64 << 20  # ~44k rows of 384 floats: below this the rows stay on the heap
_PAGE = mmap.PAGESIZE
_DONTNEED: int | None = getattr(mmap, "MADV_DONTNEED", None)
_CAN_RESERVE = hasattr(os, "posix_fallocate") and _DONTNEED is not None


class RowStore:
    """A (capacity × dim) float32 array, in anonymous memory or in an unlinked mapped file.

    ``array`` is replaced by ``grow``; rows below ``keep`` survive it. A pass over the rows
    ``release``s each part it read; rows read at random are ``take``n without the map.
    """

    def __init__(self, dim: int, scratch_dir: Path | None = None) -> None:
        import numpy as np

        self.scratch_dir = scratch_dir
        self.map_min_bytes = MAP_MIN_BYTES
        self.array: FloatMatrix = np.zeros((0, max(dim, 1)), dtype=np.float32)
        self._fd: int | None = None
        # Closes the fd when the store goes (a map keeps its own until its last view goes).
        self._closer: weakref.finalize[[int], RowStore] | None = None
        self._map: mmap.mmap | None = None
        self._warned = False

    @property
    def mapped(self) -> bool:
        return self._map is not None

    def grow(self, capacity: int, dim: int, keep: int) -> None:
        """Make room for ``capacity`` rows of ``dim`` floats, keeping rows ``[:keep]``."""
        import numpy as np

        old = self.array
        if self._fd is not None and dim == old.shape[1]:
            with contextlib.suppress(OSError):
                self._map_file(capacity, dim)  # the file keeps the rows: nothing to copy
                return
        elif self._wants_map(capacity * dim * 4):
            assert self.scratch_dir is not None
            with contextlib.suppress(OSError):
                self._fd = _scratch_fd(self.scratch_dir)
                self._closer = weakref.finalize(self, os.close, self._fd)
                self._map_file(capacity, dim)
                self._copy(old[:keep], 0)
                return
        if self._wants_map(capacity * dim * 4) and not self._warned:
            self._warned = True
            log.warning("vector rows: no scratch file in %s, kept in memory", self.scratch_dir)
        self.array = np.zeros((capacity, dim), dtype=np.float32)
        self._copy(old[:keep], 0)
        self.close()

    def _wants_map(self, nbytes: int) -> bool:
        """Big enough to map, a cache directory to hold the file (none yet: no cache), and
        a way to reserve its blocks (no ``posix_fallocate``, as on macOS: kept in memory)."""
        scratch = self.scratch_dir
        if scratch is None or nbytes < self.map_min_bytes or not _CAN_RESERVE:
            return False
        return scratch.is_dir()

    def _map_file(self, capacity: int, dim: int) -> None:
        import numpy as np

        assert self._fd is not None
        nbytes = max(capacity * dim * 4, _PAGE)
        size = os.fstat(self._fd).st_size
        if nbytes > size:  # blocks reserved now: a full disk fails here, not in a page fault
            os.posix_fallocate(self._fd, size, nbytes - size)
        mapping = mmap.mmap(self._fd, nbytes)  # shared, read-write; keeps a fd of its own
        self.array = np.frombuffer(mapping, np.float32, capacity * dim).reshape(capacity, dim)
        self._map = mapping  # an old map lives on while a view holds it

    def close(self) -> None:
        """Forget the scratch file (a map still viewed stays valid until dropped)."""
        if self._closer is not None:
            self._closer()
        self._fd, self._closer, self._map = None, None, None

    def _copy(self, rows: FloatMatrix, at: int) -> None:
        """Copy ``rows`` to ``array[at:]`` a bounded block at a time, releasing each."""
        step = max(1, (16 << 20) // max(1, rows.shape[1] * 4))
        for start in range(0, len(rows), step):
            end = min(start + step, len(rows))
            self.array[at + start : at + end] = rows[start:end]
            self.release(at + start, at + end)

    def release(self, start: int = 0, end: int | None = None) -> None:
        """Drop this process's pages of rows ``[start:end)`` (every page by default). The
        map is shared, so nothing is lost: the data stays in the page cache and the file,
        and a later read faults it back in."""
        if self._map is None:
            return
        row_bytes = self.array.shape[1] * 4
        first, last = 0, len(self._map)
        if end is not None:
            first = start * row_bytes // _PAGE * _PAGE
            last = min(-(-end * row_bytes // _PAGE) * _PAGE, last)
        if last > first and _DONTNEED is not None:
            self._map.madvise(_DONTNEED, first, last - first)

    def take(self, rows: IntArray) -> FloatMatrix:
        """A (read-only) copy of the given rows. A mapped store reads them with ``pread``,
        one call a run of consecutive rows, not through the map: a page fault maps a whole
        folio of the file and leaves it resident, so the re-rank's ~3,400 random rows a
        query would fault the whole file in over a few hundred queries (ADR-0021)."""
        import numpy as np

        if self._fd is None or not len(rows):
            taken: FloatMatrix = self.array[rows]
            return taken
        dim = self.array.shape[1]
        if int(rows.min()) < 0 or int(rows.max()) >= self.array.shape[0]:
            raise IndexError(f"rows outside 0..{self.array.shape[0] - 1}")
        firsts = np.flatnonzero(np.diff(rows, prepend=-2) != 1)
        sizes = np.diff(firsts, append=len(rows)) * (dim * 4)
        fd, pread, offsets = self._fd, os.pread, (rows[firsts] * (dim * 4)).tolist()
        data = b"".join([pread(fd, n, at) for at, n in zip(offsets, sizes.tolist(), strict=True)])
        if len(data) != len(rows) * dim * 4:
            raise OSError(f"scratch file: read {len(data)} of {len(rows) * dim * 4} bytes")
        out: FloatMatrix = np.frombuffer(data, dtype=np.float32).reshape(len(rows), dim)
        return out


def _scratch_fd(directory: Path) -> int:
    """A new file in ``directory`` that has no name (so no other process can open it)."""
    flag = getattr(os, "O_TMPFILE", 0)
    if flag:
        with contextlib.suppress(OSError):  # a file system without O_TMPFILE
            return os.open(directory, flag | os.O_RDWR, 0o600)
    # The name matches files.OURS: were we killed before the unlink, remove_stale deletes it.
    fd, name = tempfile.mkstemp(prefix=".rows-", suffix=".tmp", dir=directory)
    try:
        os.unlink(name)
    except OSError:
        os.close(fd)
        raise
    return fd
