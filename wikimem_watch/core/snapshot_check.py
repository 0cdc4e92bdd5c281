"""Checks for every field and array of an index snapshot (ADR-0015).

A snapshot is a derived cache that may be torn, stale, from another version or planted:
each check raises :class:`SnapshotInvalid` on the first thing out of shape, and the loader
then falls back to a cold scan. The checks are structural (types, ranges, lengths,
uniqueness, agreement between sections), and cheap enough to run on every start.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable, Iterable, Sequence
from itertools import accumulate, chain, starmap
from typing import Any

import numpy as np
import numpy.typing as npt

from .engine import FileRecord
from .models import Entry, Link
from .parse import diary_date

_HEX32 = re.compile(r"[0-9a-f]{32}")
_TIME = re.compile(r"\d\d:\d\d")
_STYLES = ("wikimem", "obsidian")
I32 = npt.NDArray[np.int32]


class SnapshotInvalid(ValueError):
    """The snapshot is not to be trusted; the message says why."""


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


def _str_or_none(value: object) -> bool:
    return value is None or isinstance(value, str)


def _strs(value: object) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def check_files(raw: object, accepts: Callable[[str], bool]) -> dict[str, FileRecord]:
    """``[[rel, mtime_ns, size, racy, text_hash, warnings, target, n_ids], …]`` → records
    (ids filled in by :func:`check_entries`' caller from the entries, in order)."""
    if not isinstance(raw, list):
        raise _fail("file table is not a list")
    out: dict[str, FileRecord] = {}
    for row in raw:
        if not isinstance(row, list) or len(row) != 8:
            raise _fail("a file row is malformed")
        rel, mtime, size, racy, digest, warnings, target, n_ids = row
        if not isinstance(rel, str) or rel in out or not accepts(rel):
            raise _fail(f"file {rel!r} is repeated or not a note")
        if not (_ints(mtime, size, n_ids) and isinstance(racy, bool)) or n_ids < 0:
            raise _fail(f"file {rel!r}: bad stat or count")
        if not (isinstance(digest, str) and _HEX32.fullmatch(digest)):
            raise _fail(f"file {rel!r}: bad text hash")
        if not _strs(warnings) or not _str_or_none(target):
            raise _fail(f"file {rel!r}: bad warnings or target")
        if target is not None and (not accepts(target) or target == rel):
            raise _fail(f"file {rel!r}: bad symlink target")
        stat = None if mtime < 0 or size < 0 else (mtime, size, racy)
        # ids are placeholders of the right length until the entries are read
        out[rel] = FileRecord(digest, ("",) * n_ids, tuple(warnings), target, stat)
    return out


def check_entries(raw: object, texts: str, paths: Sequence[str]) -> list[Entry]:
    """One columnar chunk of entries, the i-th belonging to the file ``paths[i]``; their
    texts are ``texts`` cut at the lengths of the ``text`` column.

    Each column is checked whole (types through ``map``, so the checks run at C speed),
    then the entries are built.
    """
    n = len(paths)
    if not isinstance(raw, dict) or any(not isinstance(raw.get(c), list) for c in _COLUMNS):
        raise _fail("an entry chunk is malformed")
    for name in _SPARSE:
        raw[name] = _dense(raw[name], n)
    if any(len(raw[c]) != n for c in _COLUMNS):
        raise _fail("an entry chunk's columns differ in length")
    for name in _COLUMNS:
        if not _column_ok(name, raw[name]):
            raise _fail(f"an entry has a bad {name!r}")
    lengths = raw["text"]
    if sum(lengths) != len(texts):
        raise _fail("entry texts do not add up")
    ends = list(accumulate(lengths))
    raw["text"] = [texts[a:b] for a, b in zip([0, *ends[:-1]], ends, strict=True)]
    days = {p: diary_date(p) for p in dict.fromkeys(paths)}
    dates = [days[p] for p in paths]
    if raw["date"] != dates or raw["kind"] != ["wiki" if d is None else "diary" for d in dates]:
        raise _fail("an entry's kind or date disagrees with its path")
    if not all(map(_belongs, raw["id"], paths)):
        raise _fail("an entry id does not belong to its file")
    # Built column by column: Entry(*row) through map runs the loop in C.
    empty = ()
    meta = [tuple(zip(m[::2], m[1::2], strict=True)) if m else empty for m in raw["meta"]]
    links = [tuple(starmap(Link, k)) if k else empty for k in raw["links"]]
    tags = [tuple(t) if t else empty for t in raw["tags"]]
    aliases = [tuple(a) if a else empty for a in raw["aliases"]]
    c = raw
    return list(
        map(
            Entry,
            c["id"], c["kind"], paths, c["heading"], c["line"], c["text"], c["hash"], dates,
            c["time"], c["ts"], c["owner"], c["source"], meta, tags, links, c["title"], aliases,
        )
    )  # fmt: skip


def _belongs(entry_id: str, path: str) -> bool:
    """``path`` or ``path#heading``: an entry id names its file."""
    return entry_id == path or (entry_id.startswith(path) and entry_id[len(path)] == "#")


_COLUMNS = (
    "id kind heading line text hash date time ts owner source meta tags links title aliases"
).split()
_SPARSE = ("meta", "tags", "links", "aliases")
_STR = {str}
_OPT_STR = {str, type(None)}


def _dense(pairs: list[object], n: int) -> list[object]:
    """A sparse column ``[[row, value], ...]`` (rows ascending) → one value per row, ``[]``
    where none is given."""
    out: list[object] = [()] * n
    if not pairs:
        return out
    if _types(pairs) - {list} or set(map(len, pairs)) - {2}:  # type: ignore[arg-type]
        raise _fail("a sparse entry column is malformed")
    rows, values = zip(*pairs, strict=True)
    if _types(rows) - {int} or _types(values) - {list} or not all(values):
        raise _fail("a sparse entry column is malformed")
    if rows[0] < 0 or rows[-1] >= n or not all(map(operator.lt, rows, rows[1:])):
        raise _fail("a sparse entry column is out of order or range")
    for row, value in zip(rows, values, strict=True):
        out[row] = value
    return out


def _types(values: Iterable[object]) -> set[type]:
    return set(map(type, values))


def _column_ok(name: str, col: list[object]) -> bool:
    """Whether every value of one entry column has its field's shape."""
    if name in ("id", "heading"):
        return _types(col) <= _STR
    if name in ("date", "ts", "owner", "source", "title"):
        return _types(col) <= _OPT_STR  # a diary date is then compared with its path
    if name == "kind":
        return set(col) <= {"diary", "wiki"}
    if name in ("line", "text"):  # a 1-based line; the length of a text cut from its section
        low = 1 if name == "line" else 0
        return _types(col) <= {int} and (not col or min(col) >= low)  # type: ignore[type-var,operator]
    if name == "hash":
        return _types(col) <= _STR and all(map(_HEX32.fullmatch, col))  # type: ignore[arg-type]
    if name == "time":
        times = [v for v in col if v is not None]
        return _types(times) <= _STR and all(map(_TIME.fullmatch, times))  # type: ignore[arg-type]
    if _types(col) - {list, tuple}:  # tuple: the empty default of a sparse column
        return False
    items: list[Any] = list(chain.from_iterable(col))  # type: ignore[arg-type]
    if name in ("tags", "aliases", "meta"):  # meta is flat: key, value, key, value
        even = name != "meta" or not any(len(v) % 2 for v in col)  # type: ignore[arg-type]
        return even and _types(items) <= _STR
    if _types(items) - {list}:
        return False
    if name == "links":
        if set(map(len, items)) - {5}:
            return False
        if not items:
            return True
        target, heading, alias, embed, style = zip(*items, strict=True)
        return (
            _types(target) <= _STR
            and _types(heading) <= _OPT_STR
            and _types(alias) <= _OPT_STR
            and _types(embed) <= {bool}
            and set(style) <= set(_STYLES)
        )
    return False


def check_terms(raw: object) -> list[str]:
    if not _strs(raw):
        raise _fail("the term list is malformed")
    assert isinstance(raw, list)
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
    steps = np.diff(slots.astype(np.int64))
    if steps.size:
        starts = np.cumsum(counts.astype(np.int64))[:-1] - 1  # where a new term begins
        rising = steps > 0
        rising[starts] = True
        if not rising.all():
            raise _fail("a term's postings repeat or are out of order")
