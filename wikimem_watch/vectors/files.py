"""The on-disk format of the vector cache: file names, one file group's read and write.

A *file group* is a keys file (a JSON header line, then one ``{"hash", "chunk"}`` line per
matrix row) plus the ``.npy`` float32 matrix its header names and checksums: a group is
``seg-<id>.keys.jsonl`` + ``seg-<id>.npy``, ``<id>`` the first 16 hex digits of a SHA-256
over its content. The base is the largest such group, and ``vectors.keys.jsonl`` a copy
of its keys file (before issue 15 the base was ``vectors.keys.jsonl`` +
``vectors-NNNNNN.npy``, still read).
Writers are atomic (temp file, fsync, rename; the matrix before the keys file, which is
the commit point). Readers raise ``ValueError`` naming what is torn; the cache drops that
group. ``cache.py`` decides what to load, keep and merge.

The header keeps the wikimem library's fields (``vectors_file``, ``model``, ``dim``) and adds
``rows``, a whole-file ``sha256`` and, since format 2, ``block_sha256``: one checksum per
``block_rows`` rows of the matrix. When the whole-file checksum fails, each block is checked
on its own, so one bad byte costs the rows of its block (re-embedded), not the whole group.
Rows that are not finite (NaN, ±inf) are never trusted either.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import re
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from wikimem_watch.atomic import atomic_write

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    FloatMatrix = npt.NDArray[np.float32]
    BoolArray = npt.NDArray[np.bool_]

KEYS_FILE = "vectors.keys.jsonl"  # a copy of the base's keys (wikimem reads this name)
FORMAT = 2
BLOCK_ROWS = 256
ORPHAN_GRACE_S = 3600.0  # a synced-in half segment may wait this long for its other half
BASE_NPY = re.compile(r"vectors-(\d{6})\.npy")
SEG_KEYS = re.compile(r"seg-[0-9a-f]{16}\.keys\.jsonl")
MANIFEST_NPY = re.compile(r"vectors-\d{6}\.npy|seg-[0-9a-f]{16}\.npy")
OURS = re.compile(r"vectors-\d{6}\.npy|seg-[0-9a-f]{16}\.(npy|keys\.jsonl)|\..+\.tmp")
Span = tuple[str, int, int]  # (content hash, first row, row count): a hash's chunks


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


def segment_name(fingerprint: Mapping[str, object], hashes: list[str], npy: bytes) -> str:
    """``seg-<sha256[:16]>`` of the content: equal bytes, equal name; else never equal."""
    digest = hashlib.sha256(json.dumps([fingerprint, hashes]).encode("utf-8"))
    digest.update(npy)
    return f"seg-{digest.hexdigest()[:16]}"


def write_group(
    keys_path: Path,
    npy_path: Path,
    fingerprint: Mapping[str, object],
    spans: list[Span],
    matrix: FloatMatrix,
    *,
    copy_keys_to: Path | None = None,
    npy: bytes | None = None,
) -> int:
    """Write the matrix, then its keys file (header: file name, fingerprint, dim, checksums);
    returns the bytes written. ``copy_keys_to`` also writes the same keys bytes there (the
    fixed-name ``vectors.keys.jsonl`` that wikimem reads), after the group is complete;
    ``npy`` is the matrix's ``.npy`` bytes when the caller has them already."""
    import numpy as np

    npy = npy_bytes(matrix) if npy is None else npy
    raw = np.ascontiguousarray(matrix, dtype=np.float32).tobytes()
    step = BLOCK_ROWS * int(matrix.shape[1]) * 4
    header = {
        "vectors_file": npy_path.name,
        **fingerprint,
        "dim": int(matrix.shape[1]),
        "rows": int(matrix.shape[0]),
        "sha256": hashlib.sha256(npy).hexdigest(),
        "block_rows": BLOCK_ROWS,
        "block_sha256": [_block_sum(raw[i : i + step]) for i in range(0, len(raw), step)],
        "format": FORMAT,
    }
    lines = [json.dumps(header, ensure_ascii=False)]
    lines += [json.dumps({"hash": h, "chunk": c}) for h, _, n in spans for c in range(n)]
    keys = ("\n".join(lines) + "\n").encode("utf-8")
    atomic_write(npy_path, npy)
    atomic_write(keys_path, keys)
    if copy_keys_to is not None:
        atomic_write(copy_keys_to, keys)
    return len(npy) + len(keys) * (1 if copy_keys_to is None else 2)


def read_keys(keys_path: Path, npy_name: re.Pattern[str]) -> tuple[dict[str, object], list[Span]]:
    """Parse one keys file into (header, spans). Raises ValueError saying what is wrong."""
    try:
        lines = keys_path.read_text(encoding="utf-8").splitlines()
        header = json.loads(lines[0]) if lines else None
        keys = [json.loads(line) for line in lines[1:]]
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"unreadable keys file: {exc}") from exc
    if not isinstance(header, dict) or not npy_name.fullmatch(str(header.get("vectors_file"))):
        raise ValueError("bad header line")
    if header.get("rows") != len(keys) or not isinstance(header.get("dim"), int):
        raise ValueError(f"header says {header.get('rows')!r} rows, file has {len(keys)} keys")
    spans: list[Span] = []
    for row, key in enumerate(keys):
        h, chunk = (key.get("hash"), key.get("chunk")) if isinstance(key, dict) else (None, None)
        if not isinstance(h, str) or not isinstance(chunk, int):
            raise ValueError(f"bad key line {row + 2}")
        if chunk == 0:
            spans.append((h, row, 1))
        elif spans and spans[-1][0] == h and spans[-1][2] == chunk:
            spans[-1] = (h, spans[-1][1], chunk + 1)
        else:
            raise ValueError(f"chunks of {h!r} are not contiguous at line {row + 2}")
    return header, spans


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


def _block_sum(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:16]


def read_matrix(npy_path: Path, header: Mapping[str, object]) -> tuple[FloatMatrix, BoolArray]:
    """Load the matrix a header names and which of its rows can be trusted.

    The whole-file checksum passing trusts every finite row. Failing it, a format-2 header's
    per-block checksums decide block by block; without them the group is dropped. Raises
    ValueError when nothing can be trusted (unreadable, wrong shape, no block checksums).
    """
    import numpy as np

    try:
        data = npy_path.read_bytes()
    except OSError as exc:
        raise ValueError(f"matrix file unreadable: {exc}") from exc
    if hashlib.sha256(data).hexdigest() == header.get("sha256"):
        try:
            matrix = np.load(io.BytesIO(data), allow_pickle=False)
        except (ValueError, OSError, EOFError) as exc:
            raise ValueError(f"{npy_path.name} is not a valid .npy: {exc}") from exc
        if matrix.dtype != np.float32 or matrix.shape != (header["rows"], header["dim"]):
            raise ValueError(f"{npy_path.name} has shape {matrix.shape} {matrix.dtype}")
        out: FloatMatrix = matrix
        good: BoolArray = np.asarray(np.isfinite(out).all(axis=1), dtype=bool)
        return out, good
    sums = header.get("block_sha256")
    if not isinstance(sums, list):
        raise ValueError(f"{npy_path.name} checksum differs (torn, or replaced by a sync)")
    return _trusted_blocks(npy_path.name, data, header, sums)


def _trusted_blocks(
    name: str, data: bytes, header: Mapping[str, object], sums: list[object]
) -> tuple[FloatMatrix, BoolArray]:
    """The rows of the blocks whose checksum still matches (the rest zero, untrusted)."""
    import numpy as np

    rows, dim, block = header.get("rows"), header.get("dim"), header.get("block_rows")
    if not (isinstance(rows, int) and isinstance(dim, int) and isinstance(block, int)):
        raise ValueError(f"{name}: header lacks rows, dim or block_rows")
    if block < 1 or dim < 1 or rows < 0 or len(sums) != -(-rows // block):
        raise ValueError(f"{name}: header block checksums do not fit its rows")
    fh = io.BytesIO(data)
    try:
        version = np.lib.format.read_magic(fh)
        read_header = (
            np.lib.format.read_array_header_1_0
            if version == (1, 0)
            else np.lib.format.read_array_header_2_0
        )
        shape, fortran, dtype = read_header(fh)
    except (ValueError, OSError, EOFError) as exc:
        raise ValueError(f"{name}: the .npy header is torn: {exc}") from exc
    if shape != (rows, dim) or fortran or dtype != np.dtype("<f4"):
        raise ValueError(f"{name} has shape {shape} {dtype}")
    offset, step = fh.tell(), block * dim * 4
    matrix = np.zeros((rows, dim), dtype=np.float32)
    good = np.zeros(rows, dtype=bool)
    for i, expected in enumerate(sums):
        chunk = data[offset + i * step : offset + (i + 1) * step]
        n = min(block, rows - i * block)
        if len(chunk) == n * dim * 4 and _block_sum(chunk) == expected:
            matrix[i * block : i * block + n] = np.frombuffer(chunk, "<f4").reshape(n, dim)
            good[i * block : i * block + n] = True
    good &= np.isfinite(matrix).all(axis=1)
    return matrix, good


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
            if now - path.stat().st_mtime > ORPHAN_GRACE_S:
                path.unlink()


def npy_of(keys_name: str) -> str:
    return keys_name.removesuffix(".keys.jsonl") + ".npy"


def manifest_target(path: Path) -> str:
    """The ``vectors_file`` named by a keys file's header line ("" when unreadable)."""
    try:
        with path.open("rb") as fh:
            header = json.loads(fh.readline(1 << 20))
    except (OSError, ValueError):
        return ""
    return str(header.get("vectors_file", "")) if isinstance(header, dict) else ""
