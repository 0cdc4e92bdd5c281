"""Checks for every section of an index snapshot (ADR-0015, ADR-0018).

A snapshot is a derived cache that may be torn, stale, from another version or planted:
each check raises :class:`SnapshotInvalid` on the first thing out of shape, and the loader
then falls back to a cold scan. The checks are structural (types, ranges, lengths,
uniqueness, agreement between sections) and run on whole arrays with numpy, so they cost
a few milliseconds per 100k entries and make no object per entry.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt

I32 = npt.NDArray[np.int32]
U8 = npt.NDArray[np.uint8]
_DECODE_BYTES = 1 << 20  # UTF-8 is checked a MB at a time: no copy of a whole column
_P = np.uint64(0x100000001B3)  # FNV prime: odd, so the row hash below mixes every byte
_K_FILE = np.uint64(0x9E3779B97F4A7C15)  # odd multipliers (golden ratio, a murmur3 constant):
_K_LEN = np.uint64(0xC2B2AE3D27D4EB4F)  # a file's or a length's step moves every high bit


class SnapshotInvalid(ValueError):
    """The snapshot is not to be trusted; the message says why."""


def json_of(blob: bytes, what: str) -> object:
    """A section or header read as JSON; anything else is ``SnapshotInvalid``."""
    try:
        return json.loads(blob)
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise SnapshotInvalid(f"{what}: not JSON ({exc})") from None


def _fail(what: str) -> SnapshotInvalid:
    return SnapshotInvalid(what)


def check_header(
    header: object, settings: dict[str, object], end: int
) -> dict[str, tuple[int, int, int]]:
    """The section table ``name → (offset, length, crc)``, each inside ``[0, end)``."""
    if not isinstance(header, dict):
        raise _fail("header is not an object")
    if header.get("settings") != settings:
        raise _fail("made by another version, vault or index settings")
    counts = header.get("counts")
    if not isinstance(counts, dict) or set(counts) != {"files", "entries"}:
        raise _fail("header counts are malformed")
    sections = header.get("sections")
    if not isinstance(sections, list):
        raise _fail("header has no section table")
    out: dict[str, tuple[int, int, int]] = {}
    for sec in sections:
        if not isinstance(sec, dict):
            raise _fail("a section entry is not an object")
        name, offset, length, crc = (sec.get(k) for k in ("name", "offset", "length", "crc"))
        if not (isinstance(name, str) and _ints(offset, length, crc)):
            raise _fail("a section entry is malformed")
        assert isinstance(offset, int) and isinstance(length, int) and isinstance(crc, int)
        if name in out or offset < 0 or length < 0 or offset + length > end:
            raise _fail(f"section {name!r} is repeated or out of bounds")
        out[name] = (offset, length, crc)
    return out


def _ints(*values: object) -> bool:
    return all(isinstance(v, int) and not isinstance(v, bool) for v in values)


def array_of(blob: bytes, dtype: str, rows: int, what: str, width: int = 1) -> npt.NDArray[Any]:
    """``blob`` as ``rows`` (× ``width``) little-endian values of ``dtype`` (read-only)."""
    item = np.dtype(dtype).itemsize
    if len(blob) != rows * width * item:
        raise _fail(f"{what}: {len(blob)} bytes for {rows} rows")
    values = np.frombuffer(blob, dtype=dtype)
    return values.reshape(rows, width) if width > 1 else values


def check_paths(raw: object, is_note: Callable[[str], bool]) -> list[str]:
    """The file table's paths: unique notes the current filter accepts, each spelled as the
    walk spells it (``a//b.md`` or ``/a/b.md`` is a note the filter accepts, but another
    name of ``a/b.md``: read at every start, and indexed twice)."""
    if not isinstance(raw, list) or any(not isinstance(p, str) for p in raw):
        raise _fail("the file paths are malformed")
    if len(set(raw)) != len(raw):
        raise _fail("a file path is repeated")
    bad = next((p for p in raw if not (_vault_path(p) and is_note(p))), None)
    if bad is not None:
        raise _fail(f"file {bad!r} is not a note")
    return raw


def _vault_path(path: str) -> bool:
    """A vault-relative path a note symlink may lead to: any file of the vault (a ``.txt``,
    one in ``.obsidian/``), never one out of it."""
    parts = path.split("/")
    return bool(path) and "\x00" not in path and "" not in parts and ".." not in parts


def check_file_extra(
    raw: object, paths: list[str]
) -> dict[int, tuple[tuple[str, ...], str | None]]:
    """``[[row, warnings, target], …]``, rows ascending: row → (warnings, symlink target)."""
    if not isinstance(raw, list):
        raise _fail("the file warnings are malformed")
    out: dict[int, tuple[tuple[str, ...], str | None]] = {}
    last = -1
    for item in raw:
        if not (isinstance(item, list) and len(item) == 3 and _ints(item[0])):
            raise _fail("a file's warnings are malformed")
        row, warnings, target = item
        if not last < row < len(paths):
            raise _fail("the file warnings are out of order or range")
        if not isinstance(warnings, list) or any(not isinstance(w, str) for w in warnings):
            raise _fail(f"file {paths[row]!r}: bad warnings")
        if target is not None and (
            not isinstance(target, str) or target == paths[row] or not _vault_path(target)
        ):
            raise _fail(f"file {paths[row]!r}: bad symlink target")
        out[row] = (tuple(warnings), target)
        last = row
    return out


def check_overrides(raw: object, rows: int) -> dict[str, dict[int, str | None]]:
    """``{field: [[row, value], …]}`` for the entries whose ts, owner or source is not the
    one their meta holds, or whose meta is not as the parser writes it; rows ascending."""
    if not isinstance(raw, dict) or set(raw) != {"ts", "owner", "source", "meta"}:
        raise _fail("the entry overrides are malformed")
    out: dict[str, dict[int, str | None]] = {}
    for name, pairs in raw.items():
        values: dict[int, str | None] = {}
        last = -1
        for pair in pairs if isinstance(pairs, list) else [None]:
            if not (isinstance(pair, list) and len(pair) == 2 and _ints(pair[0])):
                raise _fail("an entry override is malformed")
            row, value = pair
            if not last < row < rows or not (value is None or isinstance(value, str)):
                raise _fail("an entry override is out of order, range or shape")
            values[row] = value
            last = row
        out[name] = values
    return out


def check_strings(blob: bytes, sizes: I32, *, optional: bool, what: str) -> None:
    """A packed column: sizes ≥ 0 (-1 allowed when ``optional``) adding up to the buffer,
    which is UTF-8 (with lone surrogates) and cut only at character starts."""
    low = -1 if optional else 0
    if sizes.size and int(sizes.min()) < low:
        raise _fail(f"{what}: a bad size")
    lengths = np.maximum(sizes, 0).astype(np.int64)
    ends = np.cumsum(lengths)
    if (int(ends[-1]) if ends.size else 0) != len(blob):
        raise _fail(f"{what}: sizes do not add up")
    data = np.frombuffer(blob, dtype=np.uint8)
    starts = (ends - lengths)[lengths > 0]
    if starts.size and ((data[starts] & 0xC0) == 0x80).any():
        raise _fail(f"{what}: a value is cut inside a character")
    # Every cut is at a character start, so decoding a few MB at a time, cut at value
    # boundaries, checks every value.
    cuts = np.searchsorted(ends, np.arange(_DECODE_BYTES, len(blob), _DECODE_BYTES))
    at = 0
    for end in [*(int(ends[c]) for c in cuts), len(blob)]:
        if end <= at:
            continue
        try:
            blob[at:end].decode("utf-8", "surrogatepass")
        except UnicodeDecodeError:
            raise _fail(f"{what}: not UTF-8") from None
        at = end


def check_counts(counts: I32, what: str) -> int:
    """Items per row, each ≥ 0; returns the total."""
    if counts.size and int(counts.min()) < 0:
        raise _fail(f"{what}: a negative count")
    return int(counts.sum(dtype=np.int64))


def check_range(values: npt.NDArray[np.generic], low: int, high: int, what: str) -> None:
    if values.size and (int(values.min()) < low or int(values.max()) > high):
        raise _fail(f"{what}: a value out of range")


def check_keys(blob: bytes, sizes: I32, files: npt.NDArray[np.int64]) -> None:
    """Entry ids (``path`` + key): a key is empty or starts with ``#`` or ``~``, and no two
    entries of one file have the same key."""
    data = np.frombuffer(blob, dtype=np.uint8)
    lengths = np.maximum(sizes, 0).astype(np.int64)
    starts = np.cumsum(lengths) - lengths
    first = data[starts[lengths > 0]]
    if first.size and not np.isin(first, (ord("#"), ord("~"))).all():
        raise _fail("an entry id does not belong to its file")
    hashes = _fingerprints(data, starts, lengths)
    # Equal ids have equal mixed keys: when no two mixed keys are equal (one sort of one
    # array: 4–12 ms at 100k entries, where the three-key lexsort took 40–130 ms), no two ids
    # are; only a tie is checked exactly.
    with np.errstate(over="ignore"):
        mixed = hashes + files.astype(np.uint64) * _K_FILE + lengths.astype(np.uint64) * _K_LEN
    mixed.sort()
    if not (mixed[1:] == mixed[:-1]).any():
        return
    order = np.lexsort((lengths, hashes, files))
    same = (
        (files[order[1:]] == files[order[:-1]])
        & (hashes[order[1:]] == hashes[order[:-1]])
        & (lengths[order[1:]] == lengths[order[:-1]])
    )
    if same.any():  # equal ids (or, once in 2^64, a hash collision: also no snapshot)
        raise _fail("two entries of one file have the same id")


def _fingerprints(
    data: U8, starts: npt.NDArray[np.int64], lengths: npt.NDArray[np.int64]
) -> npt.NDArray[np.uint64]:
    """Per row, a 64-bit value equal for equal byte strings of one length: a row of up to
    8 bytes is its own bytes (``#09:00``: most keys), a longer one a polynomial hash."""
    out = np.zeros(lengths.size, dtype=np.uint64)
    short = np.flatnonzero((lengths > 0) & (lengths <= 8))
    width = np.arange(8, dtype=np.int64)
    for chunk in np.array_split(short, 1 + short.size // (1 << 18)):
        at = starts[chunk, None] + width
        raw = np.where(width < lengths[chunk, None], data[np.minimum(at, data.size - 1)], 0)
        out[chunk] = np.ascontiguousarray(raw.astype(np.uint8)).view(np.uint64).ravel()
    long = np.flatnonzero(lengths > 8)
    out[long] = _row_hashes(data, starts[long], lengths[long])
    return out


def _row_hashes(
    data: U8, starts: npt.NDArray[np.int64], lengths: npt.NDArray[np.int64]
) -> npt.NDArray[np.uint64]:
    """A 64-bit polynomial hash of each row's bytes (wrapping arithmetic), a few MB at a time."""
    out = np.zeros(lengths.size, dtype=np.uint64)
    rows = np.flatnonzero(lengths)
    if not rows.size:
        return out
    powers = np.cumprod(np.full(int(lengths.max()), _P, dtype=np.uint64))
    ends = np.cumsum(lengths[rows])
    for chunk in np.array_split(rows, 1 + int(ends[-1]) // _DECODE_BYTES):
        size = lengths[chunk]
        offsets = np.cumsum(size) - size
        within = np.arange(int(size.sum()), dtype=np.int64) - np.repeat(offsets, size)
        values = data[np.repeat(starts[chunk], size) + within].astype(np.uint64)
        out[chunk] = np.add.reduceat(values * powers[within], offsets)
    return out


def check_terms(raw: object) -> list[str]:
    if not isinstance(raw, list) or any(not isinstance(t, str) for t in raw):
        raise _fail("the term list is malformed")
    if "" in raw or len(set(raw)) != len(raw):
        raise _fail("the term list has an empty or repeated term")
    return raw


def check_postings(n_terms: int, n_docs: int, counts: I32, slots: I32, tfs: I32) -> None:
    """Term-major postings: ``counts[t]`` postings per term, slots in range and strictly
    ascending within a term, counts of at least one."""
    if counts.size != n_terms or slots.size != tfs.size:
        raise _fail("postings arrays disagree in length")
    if n_terms and (counts.min() < 1 or int(counts.sum(dtype=np.int64)) != slots.size):
        raise _fail("postings counts do not add up")
    if not n_terms and slots.size:
        raise _fail("postings without terms")
    if slots.size and (slots.min() < 0 or slots.max() >= n_docs or tfs.min() < 1):
        raise _fail("a posting is out of range")
    # Strictly ascending within a term; a new term may start anywhere. In pieces: the
    # differences of 10^7 postings would take 40 MB at once.
    firsts = np.cumsum(counts.astype(np.int64))[:-1]  # where each term after the first begins
    step = 1 << 20
    for at in range(0, max(slots.size - 1, 0), step):
        rising = np.diff(slots[at : at + step + 1]) > 0  # int32: slots are in [0, n_docs)
        begins = firsts[(firsts > at) & (firsts <= at + step)] - at - 1
        rising[begins] = True
        if not rising.all():
            raise _fail("a term's postings repeat or are out of order")


def check_text_hash(raw: bytes, rows: int) -> list[str]:
    """Per file, its text hash (16 raw bytes) as hex."""
    if len(raw) != 16 * rows:
        raise _fail("the file text hashes are torn")
    hexed = raw.hex()
    return [hexed[i : i + 32] for i in range(0, 32 * rows, 32)]
