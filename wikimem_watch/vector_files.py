"""The on-disk format of the vector cache: file names, one file group's read and write.

A *file group* is a keys file (a JSON header line, then one ``{"hash", "chunk"}`` line per
matrix row) plus the ``.npy`` float32 matrix its header names and checksums. The base is
``vectors.keys.jsonl`` + ``vectors-NNNNNN.npy``; a segment is ``seg-<id>.keys.jsonl`` +
``seg-<id>.npy`` with ``<id>`` the first 16 hex digits of a SHA-256 over its content.
Writers are atomic (temp file, fsync, rename; the matrix before the keys file, which is
the commit point). Readers raise ``ValueError`` naming what is torn; the cache drops that
group. ``vectors.py`` decides what to load, keep and delete.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import re
import tempfile
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    FloatMatrix = npt.NDArray[np.float32]

KEYS_FILE = "vectors.keys.jsonl"
FORMAT = 1
ORPHAN_GRACE_S = 3600.0  # a synced-in half segment may wait this long for its other half
BASE_NPY = re.compile(r"vectors-(\d{6})\.npy")
SEG_KEYS = re.compile(r"seg-[0-9a-f]{16}\.keys\.jsonl")
OURS = re.compile(r"vectors-\d{6}\.npy|seg-[0-9a-f]{16}\.(npy|keys\.jsonl)|\..+\.tmp")
Span = tuple[str, int, int]  # (content hash, first row, row count): a hash's chunks


def atomic_write(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` via a temp file in the same dir, fsync, ``os.replace``."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    with contextlib.suppress(OSError):  # directory fsync is best effort (not on every FS)
        dir_fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)


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
) -> None:
    """Write the matrix, then its keys file (header: file name, fingerprint, dim, checksum)."""
    npy = npy_bytes(matrix)
    header = {
        "vectors_file": npy_path.name,
        **fingerprint,
        "dim": int(matrix.shape[1]),
        "rows": int(matrix.shape[0]),
        "sha256": hashlib.sha256(npy).hexdigest(),
        "format": FORMAT,
    }
    lines = [json.dumps(header, ensure_ascii=False)]
    lines += [json.dumps({"hash": h, "chunk": c}) for h, _, n in spans for c in range(n)]
    atomic_write(npy_path, npy)
    atomic_write(keys_path, ("\n".join(lines) + "\n").encode("utf-8"))


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


def read_matrix(npy_path: Path, header: Mapping[str, object]) -> FloatMatrix:
    """Load the matrix a header names, checking checksum, dtype and shape (ValueError)."""
    import numpy as np

    try:
        data = npy_path.read_bytes()
    except OSError as exc:
        raise ValueError(f"matrix file unreadable: {exc}") from exc
    if hashlib.sha256(data).hexdigest() != header.get("sha256"):
        raise ValueError(f"{npy_path.name} checksum differs (torn, or replaced by a sync)")
    try:
        matrix = np.load(io.BytesIO(data), allow_pickle=False)
    except (ValueError, OSError, EOFError) as exc:
        raise ValueError(f"{npy_path.name} is not a valid .npy: {exc}") from exc
    if matrix.dtype != np.float32 or matrix.shape != (header["rows"], header["dim"]):
        raise ValueError(f"{npy_path.name} has shape {matrix.shape} {matrix.dtype}")
    out: FloatMatrix = matrix
    return out


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
