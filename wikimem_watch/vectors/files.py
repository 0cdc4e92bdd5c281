"""The on-disk format of the vector cache: file names, one file group's read and write.

A *file group* is a keys file (a JSON header line, then one ``{"hash", "chunk"}`` line per
matrix row) plus the ``.npy`` float32 matrix its header names and checksums: a group is
``seg-<id>.keys.jsonl`` + ``seg-<id>.npy``, ``<id>`` the first 16 hex digits of a SHA-256
over its content. The base is the largest such group, and ``vectors.keys.jsonl`` a copy
of its keys file (before issue 15 the base was ``vectors.keys.jsonl`` +
``vectors-NNNNNN.npy``, still read).
Writers are atomic (temp file, fsync, rename; the matrix before the keys file, which is
the commit point). Readers raise ``ValueError`` naming what is torn when nothing of a group
can be trusted (the cache drops that group), and otherwise say which rows cannot be (a bad
key line, a block whose checksum fails). ``cache.py`` (with ``cache_groups.py`` and
``cache_merges.py``) decides what to load, keep and merge.

The header keeps the wikimem library's fields (``vectors_file``, ``model``, ``dim``) and adds
``rows``, a whole-file ``sha256`` and, since format 2, ``block_sha256``: one checksum per
``block_rows`` rows of the matrix. When the whole-file checksum fails, each block is checked
on its own, so one bad byte costs the rows of its block (re-embedded), not the whole group.
Rows that are not finite (NaN, ±inf) are never trusted either.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import io
import json
import os
import re
import stat
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from wikimem_watch.atomic import atomic_file, atomic_write

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    FloatMatrix = npt.NDArray[np.float32]
    BoolArray = npt.NDArray[np.bool_]

KEYS_FILE = "vectors.keys.jsonl"  # a copy of the base's keys (wikimem reads this name)
FORMAT = 2
BLOCK_ROWS = 256
READ_BYTES = 8 << 20  # a matrix file is read and checksummed this much at a time
ORPHAN_GRACE_S = 3600.0  # a synced-in half segment may wait this long for its other half
BASE_NPY = re.compile(r"vectors-(\d{6})\.npy")
SEG_KEYS = re.compile(r"seg-[0-9a-f]{16}\.keys\.jsonl")
MANIFEST_NPY = re.compile(r"vectors-\d{6}\.npy|seg-[0-9a-f]{16}\.npy")
OURS = re.compile(r"vectors-\d{6}\.npy|seg-[0-9a-f]{16}\.(npy|keys\.jsonl)|\..+\.tmp")
Span = tuple[str, int, int]  # (content hash, first row, row count): a hash's chunks
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


def open_cache_file(path: Path) -> io.BufferedReader:
    """``path`` opened for reading, when it is a regular file (else OSError). The cache dir
    usually travels with a synced vault: a keys file planted there as a symlink to
    /dev/zero was read as one endless header line (gigabytes in seconds), and a FIFO would
    hold the open for good (ADR-0011)."""
    try:
        fd = os.open(path, _READ_FLAGS)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise OSError(exc.errno, "a symlink (not followed)", str(path)) from None
        raise
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file", str(path))
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def packed(counts: Iterable[tuple[str, int]]) -> list[Span]:
    """Spans laid out back to back from row 0."""
    spans: list[Span] = []
    start = 0
    for h, n in counts:
        spans.append((h, start, n))
        start += n
    return spans


def npy_bytes(matrix: FloatMatrix) -> bytes:
    import numpy as np

    buf = io.BytesIO()
    np.save(buf, matrix, allow_pickle=False)
    return buf.getvalue()


def npy_prefix(rows: int, dim: int) -> bytes:
    """The bytes ``np.save`` writes before the data of a (rows, dim) float32 matrix."""
    import numpy as np

    buf = io.BytesIO()
    descr = np.lib.format.dtype_to_descr(np.dtype(np.float32))
    header = {"descr": descr, "fortran_order": False, "shape": (rows, dim)}
    np.lib.format.write_array_header_1_0(buf, header)
    return buf.getvalue()


def _parts(matrix: FloatMatrix, done: Callable[[int, int], None] | None) -> Iterator[memoryview]:
    """The bytes of a C-contiguous matrix, whole blocks of ``BLOCK_ROWS`` rows at a time
    (``done(start, end)`` after each part of rows is used)."""
    rows, dim = matrix.shape
    step = max(1, READ_BYTES // (BLOCK_ROWS * dim * 4)) * BLOCK_ROWS
    for start in range(0, rows, step):
        end = min(start + step, rows)
        yield matrix[start:end].data.cast("B")
        if done is not None:
            done(start, end)


def group_sums(
    fingerprint: Mapping[str, object],
    hashes: list[str],
    matrix: FloatMatrix,
    done: Callable[[int, int], None] | None = None,
) -> tuple[str, str, list[str]]:
    """One pass over a group's rows: its name, ``seg-<sha256[:16]>`` of the content (equal
    bytes, equal name; else never equal), the .npy file's sha256 and its block sums."""
    prefix = npy_prefix(*matrix.shape)
    name = hashlib.sha256(json.dumps([fingerprint, hashes]).encode("utf-8"))
    name.update(prefix)
    whole = hashlib.sha256(prefix)
    blocks: list[str] = []
    block_bytes = BLOCK_ROWS * int(matrix.shape[1]) * 4
    for part in _parts(matrix, done):
        name.update(part)
        whole.update(part)
        blocks += [_block_sum(part[i : i + block_bytes]) for i in range(0, len(part), block_bytes)]
    return f"seg-{name.hexdigest()[:16]}", whole.hexdigest(), blocks


def write_group(
    keys_path: Path,
    npy_path: Path,
    fingerprint: Mapping[str, object],
    spans: list[Span],
    matrix: FloatMatrix,
    *,
    copy_keys_to: Path | None = None,
    sums: tuple[str, str, list[str]] | None = None,
    done: Callable[[int, int], None] | None = None,
) -> int:
    """Write the matrix, then its keys file (header: file name, fingerprint, dim, checksums);
    returns the bytes written. ``copy_keys_to`` also writes the same keys bytes there (the
    fixed-name ``vectors.keys.jsonl`` that wikimem reads), after the group is complete;
    ``sums`` are ``group_sums`` when the caller has them already. The rows are streamed
    from ``matrix`` (no copy of it is made; ``done`` as for ``group_sums``)."""
    import numpy as np

    matrix = np.ascontiguousarray(matrix, dtype=np.float32)
    hashes = [h for h, _, _ in spans]
    _, whole, blocks = sums if sums is not None else group_sums(fingerprint, hashes, matrix, done)
    header = {
        "vectors_file": npy_path.name,
        **fingerprint,
        "dim": int(matrix.shape[1]),
        "rows": int(matrix.shape[0]),
        "sha256": whole,
        "block_rows": BLOCK_ROWS,
        "block_sha256": blocks,
        "format": FORMAT,
    }
    lines = [json.dumps(header, ensure_ascii=False)]
    lines += [json.dumps({"hash": h, "chunk": c}) for h, _, n in spans for c in range(n)]
    keys = ("\n".join(lines) + "\n").encode("utf-8")
    prefix = npy_prefix(*matrix.shape)
    with atomic_file(npy_path) as fh:
        fh.write(prefix)
        for part in _parts(matrix, done):
            fh.write(part)
    atomic_write(keys_path, keys)
    if copy_keys_to is not None:
        atomic_write(copy_keys_to, keys)
    return len(prefix) + matrix.nbytes + len(keys) * (1 if copy_keys_to is None else 2)


def read_keys(
    keys_path: Path, npy_name: re.Pattern[str]
) -> tuple[dict[str, object], list[Span], list[int]]:
    """Parse one keys file into (header, spans, untrusted rows). Raises ValueError saying
    what is wrong with the file as a whole: unreadable, its header, or its row count.

    A bad key line (not JSON, not a ``{"hash", "chunk"}``, a chunk out of sequence) costs
    only its own rows: the line's row, the run of chunks just before it (it may have been
    their continuation) and the continuation chunks after it, until the next chunk 0. Those
    rows are returned as untrusted; the rest of the group stays (DESIGN §4: the torn part
    only). Read a line at a time, keeping the spans only (a million key dicts at once would
    take ~300 MB that the allocator keeps after they are freed)."""
    header: object = None
    spans: list[Span] = []
    bad: list[int] = []
    rows = 0
    try:
        with open_cache_file(keys_path) as fh:
            first = fh.readline()
            try:
                header = json.loads(first.decode("utf-8")) if first else None
            except (UnicodeDecodeError, json.JSONDecodeError):
                header = None
            orphan = False  # after a bad line: chunks > 0 continue what cannot be trusted
            for row, line in enumerate(fh):
                rows = row + 1
                try:
                    key: object = json.loads(line.decode("utf-8"))
                except (UnicodeDecodeError, json.JSONDecodeError):
                    key = None
                if _add_key(spans, key, row, orphan):
                    orphan = False
                    continue
                orphan = True
                bad.append(row)
                last = spans[-1] if spans else None
                if last is not None and last[1] + last[2] == row:
                    spans.pop()
                    bad.extend(range(last[1], last[1] + last[2]))
    except OSError as exc:
        raise ValueError(f"unreadable keys file: {exc}") from exc
    if not isinstance(header, dict) or not npy_name.fullmatch(str(header.get("vectors_file"))):
        raise ValueError("bad header line")
    if header.get("rows") != rows or not isinstance(header.get("dim"), int):
        raise ValueError(f"header says {header.get('rows')!r} rows, file has {rows} keys")
    return header, spans, sorted(bad)


def _add_key(spans: list[Span], key: object, row: int, orphan: bool) -> bool:
    """Extend ``spans`` by the key of matrix row ``row``; False when the key is bad or
    continues a run that is not there (or not trusted: ``orphan``)."""
    h, chunk = (key.get("hash"), key.get("chunk")) if isinstance(key, dict) else (None, None)
    if not isinstance(h, str) or not isinstance(chunk, int) or isinstance(chunk, bool):
        return False
    if chunk == 0:
        spans.append((h, row, 1))
        return True
    last = spans[-1] if spans else None
    if orphan or last is None or (last[0], last[1] + last[2], last[2]) != (h, row, chunk):
        return False
    spans[-1] = (h, last[1], chunk + 1)
    return True


def signature(*paths: Path) -> tuple[int, ...]:
    """(mtime_ns, size) of each path, -1s when missing: a file group changed since it was read."""
    out: list[int] = []
    for path in paths:
        try:
            st = path.stat()
        except OSError:
            out += [-1, -1]
            continue
        out += [st.st_mtime_ns, st.st_size]
    return tuple(out)


def _block_sum(data: bytes | memoryview) -> str:
    return hashlib.sha256(data).hexdigest()[:16]


def read_matrix(
    npy_path: Path,
    header: Mapping[str, object],
    out: FloatMatrix,
    done: Callable[[int, int], None] | None = None,
) -> BoolArray:
    """Read the matrix a header names into ``out`` (its rows × dim) and say which of its
    rows can be trusted (the others hold whatever was read, or nothing).

    The file is read once, ``READ_BYTES`` at a time, straight into ``out`` (``done(start,
    end)`` is called as each part of rows is written), and checksummed as it streams. The
    whole-file checksum passing trusts every finite row. Failing it, a format-2 header's
    per-block checksums decide block by block, over the bytes read; without them the group
    is dropped. Raises ValueError when nothing can be trusted (unreadable, wrong shape, no
    block checksums).
    """
    import numpy as np

    rows, dim = out.shape
    try:
        with open_cache_file(npy_path) as fh:
            whole = hashlib.sha256(_npy_prefix(npy_path.name, fh, rows, dim))
            good = np.zeros(rows, dtype=bool)
            step = max(1, READ_BYTES // (dim * 4))
            done_rows = 0
            while done_rows < rows:
                end = min(done_rows + step, rows)
                view = out[done_rows:end].data.cast("B")
                got = _read_into(fh, view)
                whole.update(view[:got])
                full = done_rows + got // (dim * 4)
                good[done_rows:full] = np.isfinite(out[done_rows:full]).all(axis=1)
                if done is not None:
                    done(done_rows, end)
                done_rows = full
                if full < end:
                    break
            else:
                for rest in iter(lambda: fh.read(READ_BYTES), b""):  # bytes past the rows
                    whole.update(rest)
    except OSError as exc:
        raise ValueError(f"matrix file unreadable: {exc}") from exc
    if whole.hexdigest() == header.get("sha256"):
        return good
    sums = header.get("block_sha256")
    if not isinstance(sums, list):
        raise ValueError(f"{npy_path.name} checksum differs (torn, or replaced by a sync)")
    return good & _trusted_blocks(npy_path.name, out, done_rows, header, sums, done)


def _read_into(fh: io.BufferedReader, view: memoryview) -> int:
    """Fill ``view`` from ``fh``; returns the bytes read (fewer only at the end of file)."""
    got = 0
    while got < len(view):
        n = fh.readinto(view[got:])
        if not n:
            break
        got += n
    return got


def _npy_prefix(name: str, fh: io.BufferedReader, rows: int, dim: int) -> bytes:
    """The bytes before a .npy file's data, once its header says (rows, dim) float32."""
    import numpy as np

    try:
        version = np.lib.format.read_magic(fh)
        read_header = (
            np.lib.format.read_array_header_1_0
            if version == (1, 0)
            else np.lib.format.read_array_header_2_0
        )
        shape, fortran, dtype = read_header(fh)
    except (ValueError, EOFError) as exc:
        raise ValueError(f"{name}: the .npy header is torn: {exc}") from exc
    if shape != (rows, dim) or fortran or dtype != np.dtype("<f4"):
        raise ValueError(f"{name} has shape {shape} {dtype}")
    size = fh.tell()
    fh.seek(0)
    prefix = fh.read(size)
    if len(prefix) != size:
        raise ValueError(f"{name}: the .npy header changed while read")
    return prefix


def _trusted_blocks(
    name: str,
    out: FloatMatrix,
    rows_read: int,
    header: Mapping[str, object],
    sums: list[object],
    done: Callable[[int, int], None] | None,
) -> BoolArray:
    """Which rows of ``out`` lie in a block whose checksum still matches."""
    import numpy as np

    rows, dim, block = header.get("rows"), header.get("dim"), header.get("block_rows")
    if not (isinstance(rows, int) and isinstance(dim, int) and isinstance(block, int)):
        raise ValueError(f"{name}: header lacks rows, dim or block_rows")
    if block < 1 or dim < 1 or rows < 0 or len(sums) != -(-rows // block):
        raise ValueError(f"{name}: header block checksums do not fit its rows")
    good = np.zeros(rows, dtype=bool)
    per_pass = max(1, READ_BYTES // (block * dim * 4))
    for first in range(0, len(sums), per_pass):
        for i in range(first, min(first + per_pass, len(sums))):
            start, end = i * block, min(rows, (i + 1) * block)
            view = out[start:end].data.cast("B")
            if end <= rows_read and _block_sum(view) == sums[i]:
                good[start:end] = True
        if done is not None:
            done(first * block, min(rows, (first + per_pass) * block))
    return good


def remove_stale(cache_dir: Path, keep: str) -> None:
    """Delete old temp files, unreferenced bases and half segments, all past a grace period
    (a sync tool may still deliver the other half). Complete segments are never touched."""
    now = time.time()
    try:
        paths = list(cache_dir.iterdir())
    except OSError:
        return
    for path in paths:
        name = path.name
        if name == keep or not OURS.fullmatch(name):
            continue
        partner = name[:20] + (".keys.jsonl" if name.endswith(".npy") else ".npy")
        if name.startswith("seg-") and (cache_dir / partner).exists():
            continue
        with contextlib.suppress(OSError):
            st = path.stat()
            # Its age here: a sync tool keeps the mtime of a file it delivers (hours old, for
            # a machine that was offline), but the ctime is when it landed on this disk.
            if now - max(st.st_mtime, st.st_ctime) > ORPHAN_GRACE_S:
                path.unlink()


def npy_of(keys_name: str) -> str:
    return keys_name.removesuffix(".keys.jsonl") + ".npy"


def manifest_target(path: Path) -> str:
    """The ``vectors_file`` named by a keys file's header line ("" when unreadable)."""
    try:
        with open_cache_file(path) as fh:
            header = json.loads(fh.readline(1 << 20))
    except (OSError, ValueError):
        return ""
    return str(header.get("vectors_file", "")) if isinstance(header, dict) else ""
