"""The entry store: every indexed entry's fields, by index slot, as columns (ADR-0018).

A million frozen :class:`~.models.Entry` objects, each with its own strings, tuples and
``Link`` objects, cost most of the engine's memory and most of a snapshot load. Here an
entry is a row of numpy arrays (line, time, day, kind, recency time, content hash,
neighbours) and of packed UTF-8 columns (:mod:`.columns`), plus three lists of references
to objects shared by every entry of a file (its path, title and aliases). An ``Entry`` is
built only when one is asked for — a hit, a day listing, a note — and equals, field for
field, the one the parser made.

The store does not decide which slot an entry goes to (the BM25 index does) and is not
locked; the engine is its only writer and calls it under its lock.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import date
from functools import lru_cache
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

from .columns import I64, ListColumn, StrColumn
from .facts import ends_asking, entry_epoch_days
from .models import Entry, Link

_WIKIMEM = 2  # link flag bits: 1 = embed, 2 = wikimem style
DERIVED = ("ts", "owner", "source")


def _meta_text(meta: tuple[tuple[str, str], ...]) -> str | None:
    """Metadata as the parser reads it, ``k=v|k=v`` (keys are ``[\\w.-]+`` and values hold
    no ``|``), or None when there is none."""
    return "|".join(f"{k}={v}" for k, v in meta) if meta else None


def _meta_of(text: str | None) -> tuple[tuple[str, str], ...]:
    if not text:
        return ()
    pairs = []
    for part in text.split("|"):
        key, _, value = part.partition("=")
        pairs.append((key, value))
    return tuple(pairs)


_EMBED = 1


def _time_of(minute: int) -> str | None:
    return None if minute < 0 else f"{minute // 60:02d}:{minute % 60:02d}"


# Times and dates repeat from entry to entry (1,440 times of day; a day per diary file), so
# each text is read once (an invalid one: -2, and ``put`` raises).
@lru_cache(maxsize=4096)
def _minute_in(text: str) -> int:
    hh, sep, mm = text.partition(":")
    minute = int(hh) * 60 + int(mm) if sep and hh.isdigit() and mm.isdigit() else -2
    return minute if 0 <= minute < 1440 and _time_of(minute) == text else -2


@lru_cache(maxsize=4096)
def _ordinal_of(text: str) -> int:
    day = date.fromisoformat(text)
    return day.toordinal() if day.isoformat() == text else -2


def _minute_of(entry: Entry) -> int:
    if entry.time is None:
        return -1
    if (minute := _minute_in(entry.time)) < 0:
        raise ValueError(f"{entry.id!r}: time {entry.time!r} is not HH:MM")
    return minute


def _day_of(entry: Entry) -> int:
    if entry.date is None:
        return 0
    if (day := _ordinal_of(entry.date)) < 0:
        raise ValueError(f"{entry.id!r}: date {entry.date!r} is not YYYY-MM-DD")
    return day


def _check(entries: Sequence[Entry]) -> None:
    """Raise for the first entry whose id or hash the columns cannot give back."""
    for e in entries:
        if not e.id.startswith(e.path):
            raise ValueError(f"entry id {e.id!r} does not start with its path {e.path!r}")
        if len(e.hash) != 32 or e.hash != e.hash.lower():
            raise ValueError(f"{e.id!r}: hash {e.hash!r} is not 32 lowercase hex digits")


A = TypeVar("A", bound=npt.NDArray[Any])


def _grown(values: A, rows: int, fill: object) -> A:
    """``values`` with ``rows`` rows, the new ones set to ``fill``."""
    if len(values) >= rows:
        return values
    out = np.empty((rows, *values.shape[1:]), dtype=values.dtype)
    out[: len(values)] = values
    out[len(values) :] = fill
    return out  # type: ignore[return-value]


def as_rows(slots: Sequence[int]) -> I64:
    """Slots (a range, an ``array('i')``, a tuple) as an int64 index array."""
    if isinstance(slots, range):
        return np.arange(slots.start, slots.stop, slots.step, dtype=np.int64)
    return np.asarray(slots, dtype=np.int64)


def _link_flags(link: Link) -> int:
    return (_EMBED if link.embed else 0) | (_WIKIMEM if link.style == "wikimem" else 0)


class EntryStore:
    """Entries by slot. Slots without an entry have ``path[slot] is None``."""

    def __init__(self) -> None:
        # References to objects shared by every entry of one file.
        self.path: list[str | None] = []
        self.title: list[str | None] = []
        self.aliases: list[tuple[str, ...]] = []
        self.line = np.zeros(0, dtype=np.int32)
        self.minute = np.zeros(0, dtype=np.int16)  # minutes after midnight; -1: no time
        self.day = np.zeros(0, dtype=np.int32)  # date ordinal; 0: no date
        self.wiki = np.zeros(0, dtype=bool)
        self.epoch = np.zeros(0, dtype=np.float64)  # recency axis, days since 1970; NaN: none
        self.hash = np.zeros((0, 16), dtype=np.uint8)  # content hash, raw
        # The diary entries before and after each one in its file (-1: none): ADR-0009.
        self.prev = np.zeros(0, dtype=np.int32)
        self.next = np.zeros(0, dtype=np.int32)
        # The entry ends with a question, which the entry after it answers: ADR-0009 §10.
        self.asks = np.zeros(0, dtype=bool)
        self.key = StrColumn()  # the id after the path: "#heading", "#heading~2", "" ...
        self.heading = StrColumn()
        self.text = StrColumn()
        # ts, owner and source are read from meta (the parser takes them from there); an
        # entry whose field says otherwise (an invalid ts is None) is listed here.
        # meta that is not as the parser makes it is listed here, as JSON.
        self.overrides: dict[str, dict[int, str | None]] = {f: {} for f in (*DERIVED, "meta")}
        self.tags = ListColumn(1)
        self.meta = StrColumn()  # "k=v|k=v" (see _meta_text); None: no metadata
        self.links = ListColumn(3, flags=True)  # target, heading, alias; flags

    @property
    def capacity(self) -> int:
        return len(self.path)

    def grow(self, capacity: int) -> None:
        have = len(self.path)
        if capacity <= have:
            return
        # An eighth more, not half: the new rows are written (filled) at once, so room held
        # for later is resident memory; a copy of every column per eighth costs little.
        extra = max(capacity - have, have // 8, 1024)
        self.path.extend([None] * extra)
        self.title.extend([None] * extra)
        self.aliases.extend([()] * extra)
        self._extend(have + extra)

    def _extend(self, rows: int) -> None:
        """Numpy and packed columns to ``rows`` rows (new rows empty)."""
        self.line = _grown(self.line, rows, 0)
        self.minute = _grown(self.minute, rows, -1)
        self.day = _grown(self.day, rows, 0)
        self.wiki = _grown(self.wiki, rows, False)
        self.epoch = _grown(self.epoch, rows, np.nan)
        self.hash = _grown(self.hash, rows, 0)
        self.prev = _grown(self.prev, rows, -1)
        self.next = _grown(self.next, rows, -1)
        self.asks = _grown(self.asks, rows, False)
        for col in self._strings():
            col.grow(rows)
        for lst in (self.tags, self.links):
            lst.grow(rows)

    def _strings(self) -> tuple[StrColumn, ...]:
        return (self.key, self.heading, self.text, self.meta)

    # -------------------------------------------------------------------- writing

    def put(
        self, slots: Sequence[int], entries: Sequence[Entry], asks: Sequence[bool] | None = None
    ) -> None:
        """Store ``entries`` at ``slots`` (grown to fit); ``asks``: whether each ends with a
        question, when the caller has it (else found here). Raises ``ValueError`` for an entry
        the columns cannot give back unchanged (an id outside its path, a time that is not
        ``HH:MM``, a hash that is not 32 hex digits): the parser makes none."""
        if not slots:
            return
        self.grow(max(slots) + 1)
        rows = np.asarray(slots, dtype=np.int64)
        ids, paths, hash_list = (
            [e.id for e in entries],
            [e.path for e in entries],
            [e.hash for e in entries],
        )
        hashes = "".join(hash_list)
        if (
            not all(map(str.startswith, ids, paths))
            or hashes != hashes.lower()
            or set(map(len, hash_list)) != {32}
        ):
            _check(entries)  # raises
        keys = [i[len(p) :] for i, p in zip(ids, paths, strict=True)]
        first = slots[0]
        if list(slots) == list(range(first, first + len(slots))):  # a run: a cold scan's
            self.path[first : first + len(slots)] = paths
            self.title[first : first + len(slots)] = [e.title for e in entries]
            self.aliases[first : first + len(slots)] = [e.aliases for e in entries]
        else:
            for slot, e in zip(slots, entries, strict=True):
                self.path[slot], self.title[slot], self.aliases[slot] = e.path, e.title, e.aliases
        raw = bytes.fromhex(hashes)
        self.hash[rows] = np.frombuffer(raw, dtype=np.uint8).reshape(-1, 16)
        self.line[rows] = [e.line for e in entries]
        self.minute[rows] = [_minute_of(e) for e in entries]
        self.day[rows] = [_day_of(e) for e in entries]
        self.wiki[rows] = [e.kind == "wiki" for e in entries]
        self.asks[rows] = [bool(q) for q in ends_asking(entries)] if asks is None else asks
        self.epoch[rows] = [entry_epoch_days(e) for e in entries]
        self.key.put(rows, keys)
        self.heading.put(rows, [e.heading for e in entries])
        self.text.put(rows, [e.text for e in entries])
        self.tags.put(rows, [[(t,) for t in e.tags] for e in entries])
        self.meta.put(rows, self._metas(slots, entries))
        self.links.put(
            rows,
            [[(k.target, k.heading, k.alias) for k in e.links] for e in entries],
            [[_link_flags(k) for k in e.links] for e in entries],
        )

    def _metas(self, slots: Sequence[int], entries: Sequence[Entry]) -> list[str | None]:
        """Each entry's metadata as stored (``_meta_text``), noting in ``overrides`` what
        the text cannot give back: metadata not as the parser writes it (kept as JSON), a
        ts, owner or source other than the metadata's (``DERIVED``). One pass; an entry
        whose fields agree with its metadata, with no override held, costs one comparison."""
        derived = self._derived
        odd = self.overrides["meta"]
        texts: list[str | None] = []
        for slot, e in zip(slots, entries, strict=True):
            text = _meta_text(e.meta)
            if text is not None and _meta_of(text) != e.meta:
                odd[slot] = json.dumps(e.meta)  # not as parsed
            elif odd:
                odd.pop(slot, None)
            texts.append(text)
            values = (e.ts, e.owner, e.source)
            theirs = tuple(map(dict(e.meta).get, DERIVED)) if e.meta else (None, None, None)
            if values == theirs and not any(derived):
                continue  # nothing to note, nothing to forget
            for value, their, overrides in zip(values, theirs, derived, strict=True):
                if value != their:
                    overrides[slot] = value
                elif overrides:
                    overrides.pop(slot, None)
        return texts

    def drop(self, slots: Sequence[int]) -> None:
        """Forget the entries at ``slots`` (their neighbour links are the caller's)."""
        if not slots:
            return
        rows = np.asarray(slots, dtype=np.int64)
        for slot in slots:
            self.path[slot] = self.title[slot] = None
            self.aliases[slot] = ()
        self.day[rows] = 0
        self.wiki[rows] = False
        self.asks[rows] = False
        self.epoch[rows] = np.nan
        self.minute[rows] = -1
        for col in self._strings():
            col.drop(rows)
        for lst in (self.tags, self.links):
            lst.drop(rows)
        for overrides in self.overrides.values():
            for slot in slots:
                overrides.pop(slot, None)

    def wasteful(self) -> bool:
        """Whether dropped and rewritten entries hold enough bytes for :meth:`compact`."""
        return any(c.wasteful() for c in self._strings()) or any(
            lst.wasteful() for lst in (self.tags, self.links)
        )

    def compact(self, live: I64, *, force: bool = False) -> None:
        """Reclaim the bytes of dropped and rewritten entries once they pass half."""
        for col in self._strings():
            col.compact(live, force=force)
        for lst in (self.tags, self.links):
            lst.compact(live, force=force)

    # -------------------------------------------------------------------- reading

    def has(self, slot: int) -> bool:
        return 0 <= slot < len(self.path) and self.path[slot] is not None

    def entry(self, slot: int) -> Entry:
        """The entry at ``slot``, built from its columns."""
        path = self.path[slot]
        if path is None:
            raise KeyError(f"no entry at slot {slot}")
        day = self.day.item(slot)
        heading = self.heading.get(slot)
        text = self.text.get(slot)
        assert heading is not None and text is not None
        meta = self.meta_of(slot)
        fields = dict(meta) if meta else {}
        derived = [
            over[slot] if over and slot in over else fields.get(name)
            for name, over in zip(DERIVED, self._derived, strict=True)
        ]
        return Entry(
            id=path + (self.key.get(slot) or ""),
            kind="wiki" if self.wiki.item(slot) else "diary",
            path=path,
            heading=heading,
            line=self.line.item(slot),
            text=text,
            hash=self.hash[slot].tobytes().hex(),
            date=date.fromordinal(day).isoformat() if day else None,
            time=_time_of(self.minute.item(slot)),
            ts=derived[0],
            owner=derived[1],
            source=derived[2],
            meta=meta,
            tags=self.tags_of(slot),
            links=self.links_of(slot),
            title=self.title[slot],
            aliases=self.aliases[slot],
        )

    def entry_id(self, slot: int) -> str:
        path = self.path[slot]
        if path is None:
            raise KeyError(f"no entry at slot {slot}")
        return path + (self.key.get(slot) or "")

    def content_hash(self, slot: int) -> str:
        return bytes(self.hash[slot]).hex()

    def date_time(self, slot: int) -> tuple[str | None, str | None]:
        day = int(self.day[slot])
        return (date.fromordinal(day).isoformat() if day else None), _time_of(
            int(self.minute[slot])
        )

    @property
    def _derived(self) -> list[dict[int, str | None]]:
        return [self.overrides[name] for name in DERIVED]

    def tags_of(self, slot: int) -> tuple[str, ...]:
        if not self.tags.count.item(slot):
            return ()
        return tuple(str(t) for (t,) in self.tags.get(slot))

    def meta_of(self, slot: int) -> tuple[tuple[str, str], ...]:
        odd = self.overrides["meta"]
        if slot in odd:
            return tuple((str(k), str(v)) for k, v in json.loads(odd[slot] or "[]"))
        return _meta_of(self.meta.get(slot))

    def links_of(self, slot: int) -> tuple[Link, ...]:
        if not self.links.count.item(slot):
            return ()
        flags = self.links.item_flags(slot)
        return tuple(
            Link(
                str(target),
                heading,
                alias,
                embed=bool(f & _EMBED),
                style="wikimem" if f & _WIKIMEM else "obsidian",
            )
            for (target, heading, alias), f in zip(self.links.get(slot), flags, strict=True)
        )

    def linked_slots(self) -> I64:
        """Slots of the entries that have links."""
        return np.flatnonzero(self.links.count[: self.capacity] > 0).astype(np.int64)
