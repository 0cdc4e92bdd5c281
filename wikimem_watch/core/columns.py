"""Packed string columns: many short strings in one UTF-8 buffer, addressed by row number.

The entry store (ADR-0018) keeps every entry's text and small string fields here instead of
as Python objects: a Python ``str`` costs 49–80 bytes of header and, for mixed Chinese and
English text, two bytes a character, and creating one per field per entry was most of a
snapshot load. A row's string is ``buffer[at[row] : at[row] + size[row]]`` decoded as UTF-8
(``surrogatepass``: a note read with a lone surrogate keeps it); ``size`` -1 is ``None``.

A column loaded from a snapshot keeps the section's ``bytes`` as its base and appends to a
separate tail, so a load copies nothing. Rewriting or dropping a row leaves its old bytes
behind as garbage; :meth:`StrColumn.compact` rewrites the live rows once garbage passes half.

:class:`ListColumn` holds a short list of string tuples per row (tags, metadata pairs, links):
a row's items are the item rows ``first[row] .. first[row] + count[row]`` of its fields.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Sequence

import numpy as np
import numpy.typing as npt

I64 = npt.NDArray[np.int64]
I32 = npt.NDArray[np.int32]
U8 = npt.NDArray[np.uint8]
COMPACT_MIN_BYTES = 1 << 20  # garbage below this is never worth a rewrite
COMPACT_MIN_ITEMS = 1 << 14
PIECE_BYTES = 1 << 20  # a streamed column's pieces (the snapshot writer's)


def _grown(values: npt.NDArray[np.generic], rows: int, fill: int) -> npt.NDArray[np.generic]:
    if rows <= len(values):
        return values
    # An eighth more at a time (as the entry store): filled rows are resident memory.
    out = np.full(max(rows, len(values) + len(values) // 8, 1024), fill, dtype=values.dtype)
    out[: len(values)] = values
    return out


def _encoded(values: Sequence[str | None]) -> tuple[bytes, I32]:
    """``values`` as one UTF-8 buffer and the size of each in it (-1: None).

    When every value is there and their concatenation is ASCII (a ``str`` knows that without
    a scan: ids' keys, headings, most metadata), its one encoding is the values' encodings
    side by side and a value's size is its length: no encode per value."""
    if None not in values:
        joined = "".join(values)  # type: ignore[arg-type]  # no None
        if joined.isascii():
            sizes = np.fromiter(map(len, values), np.int32, len(values))  # type: ignore[arg-type]
            return joined.encode("ascii"), sizes
    raws = [None if v is None else v.encode("utf-8", "surrogatepass") for v in values]
    sizes = np.fromiter((-1 if r is None else len(r) for r in raws), np.int32, len(raws))
    return b"".join(r for r in raws if r), sizes


class StrColumn:
    """Strings (or ``None``) by row, packed as UTF-8."""

    __slots__ = ("_base", "_tail", "at", "garbage", "size")

    def __init__(self, base: bytes = b"", at: I64 | None = None, size: I32 | None = None) -> None:
        self._base = base
        self._tail = bytearray()
        self.at = np.zeros(0, dtype=np.int64) if at is None else at
        self.size = np.zeros(0, dtype=np.int32) if size is None else size
        self.garbage = 0

    @classmethod
    def packed(cls, blob: bytes, sizes: I32) -> StrColumn:
        """A column whose row ``i`` is the next ``sizes[i]`` bytes of ``blob`` (-1: None).
        The caller has checked that the sizes add up and cut ``blob`` at characters."""
        lengths = np.maximum(sizes, 0).astype(np.int64)
        at = np.cumsum(lengths) - lengths
        return cls(blob, at, np.array(sizes, dtype=np.int32))

    @property
    def nbytes(self) -> int:
        return len(self._base) + len(self._tail)

    def grow(self, rows: int) -> None:
        self.at = _grown(self.at, rows, 0)  # type: ignore[assignment]
        self.size = _grown(self.size, rows, -1)  # type: ignore[assignment]

    def raw(self, at: int, size: int) -> bytes:
        """``size`` bytes from offset ``at`` (which may span the base and the tail)."""
        base = len(self._base)
        if at + size <= base:
            return self._base[at : at + size]
        with memoryview(self._tail) as tail:  # one copy, not a bytearray slice and then bytes
            if at >= base:
                return bytes(tail[at - base : at - base + size])
            return self._base[at:] + bytes(tail[: at + size - base])

    def get(self, row: int) -> str | None:
        size: int = self.size.item(row)
        if size < 0:
            return None
        return self.raw(self.at.item(row), size).decode("utf-8", "surrogatepass")

    def values(self, rows: int) -> list[str | None]:
        """Rows ``0 .. rows - 1`` as a list: one decode when they are ASCII and side by side
        (a freshly loaded column), else one per row."""
        sizes = self.size[:rows]
        lengths = np.maximum(sizes, 0).astype(np.int64)
        at = self.at[:rows]
        if rows and (at == np.cumsum(lengths) - lengths + at[0]).all():
            raw = self.raw(int(at[0]), int(lengths.sum()))
            if raw.isascii():
                text = raw.decode("ascii")
                ends = np.cumsum(lengths).tolist()
                cut = zip([0, *ends[:-1]], ends, sizes.tolist(), strict=True)
                return [None if size < 0 else text[a:b] for a, b, size in cut]
        return [self.get(row) for row in range(rows)]

    def put(self, rows: Sequence[int] | I64, values: Sequence[str | None]) -> None:
        """Set each of ``rows`` to its value (rows beyond the column's size: ``grow`` first)."""
        blob, sizes = _encoded(values)
        self.drop(rows)
        lengths = np.maximum(sizes, 0).astype(np.int64)
        start = self.nbytes
        self._tail += blob
        self.at[rows] = start + np.cumsum(lengths) - lengths
        self.size[rows] = sizes

    def drop(self, rows: Sequence[int] | I64) -> None:
        """Forget rows (their bytes become garbage)."""
        old = self.size[rows]
        self.garbage += int(old[old > 0].sum())
        self.size[rows] = -1

    def gather(self, rows: I64) -> tuple[bytes, I32]:
        """The strings of ``rows`` in that order, as one buffer and their sizes (-1: None):
        contiguous runs are copied whole, so a column in row order costs one slice."""
        return b"".join(self.pieces(rows, sys.maxsize)), self.size[rows].astype(np.int32)

    def pieces(self, rows: I64, limit: int = PIECE_BYTES) -> Iterator[bytes]:
        """:meth:`gather`'s buffer in pieces of at most ``limit`` bytes, for a writer that
        streams it: the column is never copied whole, and no Python object is made per row
        (runs of rows side by side are found with numpy, and each is cut at ``limit``)."""
        sizes = self.size[rows]
        nonempty = rows[sizes > 0]
        if not nonempty.size:
            return
        at = self.at[nonempty]
        ends = at + self.size[nonempty].astype(np.int64)
        breaks = np.flatnonzero(at[1:] != ends[:-1]) + 1
        run_at = at[np.concatenate([[0], breaks])].tolist()
        run_end = ends[np.concatenate([breaks, [nonempty.size]]) - 1].tolist()
        for a, b in zip(run_at, run_end, strict=True):
            for start in range(a, b, limit):
                yield self.raw(start, min(limit, b - start))

    def wasteful(self) -> bool:
        return self.garbage >= COMPACT_MIN_BYTES and 2 * self.garbage >= self.nbytes

    def compact(self, rows: I64, *, force: bool = False) -> bool:
        """Rewrite the live ``rows`` into a fresh buffer when garbage passes half the bytes
        (or ``force``); returns whether it did."""
        if not force and not self.wasteful():
            return False
        blob, sizes = self.gather(rows)
        lengths = np.maximum(sizes, 0).astype(np.int64)
        self._base, self._tail, self.garbage = blob, bytearray(), 0
        self.at[rows] = np.cumsum(lengths) - lengths
        return True


class ListColumn:
    """Per row, a list of items; each item is ``fields`` strings (or None) and, optionally,
    a small flag byte."""

    __slots__ = ("count", "fields", "first", "flags", "items", "garbage")

    def __init__(self, fields: int, *, flags: bool = False) -> None:
        self.first = np.zeros(0, dtype=np.int64)
        self.count = np.zeros(0, dtype=np.int32)
        self.fields = [StrColumn() for _ in range(fields)]
        self.flags: U8 | None = np.zeros(0, dtype=np.uint8) if flags else None
        self.items = 0  # item rows in use, live or garbage
        self.garbage = 0

    @classmethod
    def packed(cls, counts: I32, fields: list[StrColumn], flags: U8 | None = None) -> ListColumn:
        """Rows whose items follow each other: row ``i`` has the next ``counts[i]`` items."""
        out = cls(0)
        out.count = np.array(counts, dtype=np.int32)
        lengths = out.count.astype(np.int64)
        out.first = np.cumsum(lengths) - lengths
        out.fields = fields
        out.flags = None if flags is None else np.array(flags, dtype=np.uint8)
        out.items = int(lengths.sum())
        return out

    def grow(self, rows: int) -> None:
        self.first = _grown(self.first, rows, 0)  # type: ignore[assignment]
        self.count = _grown(self.count, rows, 0)  # type: ignore[assignment]

    def get(self, row: int) -> list[tuple[str | None, ...]]:
        """The row's items, each as a tuple of its fields (flags: :meth:`item_flags`)."""
        n = int(self.count[row])
        if not n:
            return []
        first = int(self.first[row])
        out = []
        for item in range(first, first + n):
            values: list[str | None] = [col.get(item) for col in self.fields]
            out.append(tuple(values))
        return out

    def item_flags(self, row: int) -> list[int]:
        assert self.flags is not None
        first = int(self.first[row])
        return [int(f) for f in self.flags[first : first + int(self.count[row])]]

    def put(
        self,
        rows: Sequence[int] | I64,
        lists: Sequence[Sequence[Sequence[str | None]]],
        flags: Sequence[Sequence[int]] | None = None,
    ) -> None:
        """Set each row's items (``lists[i]``: tuples of ``fields`` values)."""
        self.drop(rows)
        counts = np.fromiter(map(len, lists), np.int32, len(lists))
        lengths = counts.astype(np.int64)
        total = int(lengths.sum())
        self.first[rows] = self.items + np.cumsum(lengths) - lengths
        self.count[rows] = counts
        if not total:
            return
        new = np.arange(self.items, self.items + total, dtype=np.int64)
        self.items += total
        for n, col in enumerate(self.fields):
            col.grow(self.items)
            col.put(new, [item[n] for items in lists for item in items])
        if self.flags is not None:
            assert flags is not None
            self.flags = _grown(self.flags, self.items, 0)  # type: ignore[assignment]
            assert self.flags is not None
            self.flags[new] = [f for row in flags for f in row]

    def drop(self, rows: Sequence[int] | I64) -> None:
        self.garbage += int(self.count[rows].sum())
        self.count[rows] = 0

    def item_rows(self, rows: I64) -> I64:
        """The item rows of ``rows``, in order."""
        counts = self.count[rows].astype(np.int64)
        total = int(counts.sum())
        if not total:
            return np.zeros(0, dtype=np.int64)
        starts = np.repeat(self.first[rows] - (np.cumsum(counts) - counts), counts)
        return starts + np.arange(total, dtype=np.int64)

    def wasteful(self) -> bool:
        return self.garbage >= COMPACT_MIN_ITEMS and 2 * self.garbage >= self.items

    def compact(self, rows: I64, *, force: bool = False) -> bool:
        """Renumber the items of the live ``rows`` contiguously once half are garbage."""
        if not force and not self.wasteful():
            return False
        items = self.item_rows(rows)
        fields = []
        for col in self.fields:
            blob, sizes = col.gather(items)
            fields.append(StrColumn.packed(blob, sizes))
        self.fields = fields
        if self.flags is not None:
            self.flags = self.flags[items]
        counts = self.count[rows].astype(np.int64)
        self.first[rows] = np.cumsum(counts) - counts
        self.items, self.garbage = int(items.size), 0
        return True
