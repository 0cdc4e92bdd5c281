"""The engine's read side: per-slot facts for the ranking, links, days, notes and digests.

A mixin of :class:`~wikimem_watch.core.engine.Engine`, which owns the state and is its only
mutator; every method here reads under the engine's ``lock`` (or is called by one that
holds it) and changes nothing but what is built lazily: the name table and the digests of
files restored from a snapshot. ``Entry`` objects are built from the entry store only for
what is returned (ADR-0018).
"""

from __future__ import annotations

import hashlib
import threading
from array import array
from collections.abc import Iterable, Iterator, Mapping
from datetime import date, timedelta
from itertools import chain

import numpy as np
import numpy.typing as npt

from ..errors import NotFound
from .bm25 import Bm25Index
from .models import Entry
from .names import Names
from .store import EntryStore, as_rows
from .tokenize import Tokenizer
from .vector_keys import VectorKeys, hex_keys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence

    from .engine import FileRecord


def file_digest(rel: str, key_sizes: bytes, keys: bytes, hashes: bytes, facts: bytes) -> int:
    """The digest of one file's entries (their id keys, sizes and content hashes in file
    order, and ``facts``: ``EngineReads._facts``): what ``file_digests`` reports and
    ``digest`` XORs together."""
    raw = hashlib.blake2b(rel.encode("utf-8", "surrogatepass"), digest_size=16)
    raw.update(key_sizes)
    raw.update(keys)
    raw.update(hashes)
    raw.update(facts)
    return int.from_bytes(raw.digest(), "big")


TERM_IDS_KEPT = 16384  # entries whose term ids ``information`` remembers (~4 MB)


class EngineReads:
    """Read methods over the engine's state (declared here for the type checker)."""

    lock: threading.RLock
    index: Bm25Index
    store: EntryStore
    tokenizer: Tokenizer
    _term_ids: dict[int, tuple[bytes, array[int]]]  # slot → (content hash, its term ids)
    _term_ids_at: int  # ``index.forgotten`` when they were read
    files: dict[str, FileRecord]
    skipped: dict[str, str]
    linked_dirs: dict[str, str]
    days: dict[str, array[int]]
    _names: Names | None
    _digest: int
    _digest_pending: set[str]
    vector_keys: VectorKeys

    def _file_digest(self, rel: str, slots: Sequence[int]) -> int:
        """A digest of one file's entries: their ids and content hashes, in file order, and
        what else a query returns or filters on (``_facts``)."""
        rows = as_rows(slots)
        keys, sizes = self.store.key.gather(rows)
        hashes = self.store.hash[rows].tobytes()
        facts = self._facts([slots])[0]
        return file_digest(rel, sizes.astype("<i4").tobytes(), keys, hashes, facts)

    def _file_digests(self, files: Sequence[tuple[str, Sequence[int]]]) -> list[int]:
        """``_file_digest`` of several files: one gather of all their entries' keys."""
        rows = np.concatenate([as_rows(slots) for _, slots in files]) if files else as_rows([])
        keys, sizes = self.store.key.gather(rows)
        ends = np.cumsum(np.maximum(sizes, 0), dtype=np.int64).tolist()
        key_sizes, hashes = sizes.astype("<i4").tobytes(), self.store.hash[rows].tobytes()
        out, a, at = [], 0, 0
        for (rel, slots), facts in zip(files, self._facts([s for _, s in files]), strict=True):
            b = a + len(slots)
            end = ends[b - 1] if b > a else at
            out.append(
                file_digest(
                    rel, key_sizes[4 * a : 4 * b], keys[at:end], hashes[16 * a : 16 * b], facts
                )
            )
            a, at = b, end
        return out

    def _facts(self, files: Sequence[Sequence[int]]) -> list[bytes]:
        """Per file (its slots), what a query returns or filters on besides the entry ids and
        texts (the content hash covers a section's text, not its note's front matter): the
        note's title and aliases and each entry's tags, so ``check`` sees an index wrong in
        them alone. One gather of every tag of the files, cut per file."""
        store, tags = self.store, self.store.tags
        rows = np.fromiter(chain.from_iterable(files), np.int64)
        counts = tags.count[rows].astype(np.int64)
        starts = np.cumsum(counts) - counts  # where each row's tags begin among all of them
        items = np.repeat(tags.first[rows] - starts, counts) + np.arange(int(counts.sum()))
        data, sizes = tags.fields[0].gather(items)
        item_ends = np.cumsum(counts).tolist()
        byte_ends = np.cumsum(np.maximum(sizes, 0), dtype=np.int64).tolist()
        tag_counts, tag_sizes = counts.astype("<i4").tobytes(), sizes.astype("<i4").tobytes()
        titles, aliases = store.title, store.aliases  # shared by a note's entries (EntryStore)
        out, a, i, at = [], 0, 0, 0
        for slots in files:
            b = a + len(slots)
            j = item_ends[b - 1] if b > a else i
            end = byte_ends[j - 1] if j > i else at
            names = "\0".join((titles[slots[0]] or "", *aliases[slots[0]])) if b > a else ""
            head = names.encode("utf-8", "surrogatepass") + b"\1"
            out.append(head + tag_counts[4 * a : 4 * b] + tag_sizes[4 * i : 4 * j] + data[at:end])
            a, i, at = b, j, end
        return out

    # ------------------------------------------------------------------ slots

    def slot_entry(self, slot: int) -> Entry:
        return self.store.entry(slot)

    def slot_id(self, slot: int) -> str:
        return self.store.entry_id(slot)

    def slot_of(self, entry_id: str) -> int | None:
        """The slot of the entry with this id, found through its file (the id is the path,
        then ``#heading`` or ``~n``): O(entries of that file)."""
        ends = [i for i, ch in enumerate(entry_id) if ch in "#~"]
        for end in (*ends, len(entry_id)):
            record = self.files.get(entry_id[:end])
            if record is None:
                continue
            for slot in record.slots:
                if self.store.entry_id(slot) == entry_id:
                    return slot
        return None

    def slot_arrays(
        self,
    ) -> tuple[npt.NDArray[np.int32], npt.NDArray[np.bool_], npt.NDArray[np.float64]]:
        """Per-slot day ordinal (0 = none), is-wiki flag and entry time in epoch days."""
        return self.store.day, self.store.wiki, self.store.epoch

    def information(self, slots: Sequence[int]) -> npt.NDArray[np.float64]:
        """Per slot, how much its entry says: the idf summed over the distinct terms of its
        text, tags and (for an item named by its heading) heading, by the index's current
        statistics (``Bm25Index.information``, ADR-0009 §11).

        An entry's term ids are remembered by slot and content hash (tokenizing a text costs
        ~30 µs, summing its idf ~5), and forgotten together when the index drops a term.
        """
        store, index, cache = self.store, self.index, self._term_ids
        if self._term_ids_at != index.forgotten or len(cache) >= TERM_IDS_KEPT:
            cache.clear()
            self._term_ids_at = index.forgotten
        groups = []
        for slot in slots:
            digest = store.hash[slot].tobytes()
            held = cache.get(slot)
            if held is None or held[0] != digest:
                parts = [store.text.get(slot) or "", " ".join(store.tags_of(slot))]
                if store.wiki.item(slot) or store.minute.item(slot) < 0:
                    parts.append(store.heading.get(slot) or "")
                held = cache[slot] = (digest, index.term_ids(self.tokenizer("\n".join(parts))))
            groups.append(held[1])
        return index.idf_sums(groups)

    def previous_slots(self) -> npt.NDArray[np.int32]:
        """Per slot, the slot of the diary entry before it in its file (-1: none)."""
        return self.store.prev

    def asks(self) -> npt.NDArray[np.bool_]:
        """Per slot, whether the diary entry ends with a question (the next one answers it)."""
        return self.store.asks

    def vector_key(self, slot: int) -> str:
        """The vector cache key of the entry at ``slot``."""
        return self.vector_keys.hex(slot)

    def vector_keys_of(self, slots: npt.NDArray[np.int64]) -> list[str]:
        """The vector cache keys of the entries at ``slots`` that have one."""
        has = self.vector_keys.has
        slots = slots[slots < has.size]
        return hex_keys(self.vector_keys.raw[slots[has[slots]]])

    def slots_of_keys(self, keys: Iterable[str]) -> npt.NDArray[np.int64]:
        """Index slots of the live entries whose vector key is in ``keys``."""
        return self.vector_keys.slots_of(keys)

    # ------------------------------------------------------------------ notes, days

    def entries_of(self, rel: str) -> list[Entry]:
        with self.lock:
            record = self.files.get(rel)
            if record is None:
                raise NotFound(f"no indexed note at {rel!r} (paths are vault-relative)")
            return [self.store.entry(s) for s in record.slots]

    def entries_on(self, day: str) -> list[Entry]:
        with self.lock:
            return [self.store.entry(s) for s in self.days.get(day, ())]

    def day_counts(self, start: str | None = None, end: str | None = None) -> list[tuple[str, int]]:
        with self.lock:
            return sorted(
                (d, len(slots))
                for d, slots in self.days.items()
                if (start is None or d >= start) and (end is None or d <= end)
            )

    def window_slots(self, start: date, end: date) -> list[int]:
        """Slots of the diary entries dated within [start, end], oldest first. Costs
        O(days + entries)."""
        with self.lock:
            out: list[int] = []
            if 12 * (end - start).days > len(self.days):  # a date string costs ~12 dict steps
                days = sorted(d for d in self.days if start.isoformat() <= d <= end.isoformat())
            else:
                days = [(start + timedelta(n)).isoformat() for n in range((end - start).days + 1)]
            for day in days:
                out.extend(self.days.get(day, ()))
            return out

    def window_entries(self, start: date, end: date) -> list[Entry]:
        """Diary entries dated within [start, end], oldest first."""
        with self.lock:
            return [self.store.entry(s) for s in self.window_slots(start, end)]

    def count_days(self, start: date, end: date) -> int:
        """How many diary entries are dated within [start, end]. Costs O(days)."""
        with self.lock:
            if 12 * (end - start).days > len(self.days):  # a date string costs ~12 dict steps
                lo, hi = start.isoformat(), end.isoformat()
                return sum(len(slots) for d, slots in self.days.items() if lo <= d <= hi)
            days = ((start + timedelta(n)).isoformat() for n in range((end - start).days + 1))
            return sum(len(self.days.get(d, ())) for d in days)

    # ------------------------------------------------------------------ digests, counts

    def _fold_digests(self) -> None:
        """Compute the digests of files restored from a snapshot that nobody asked for yet.

        A restored file's slots are a range whose keys lie side by side in the key column:
        its digest is then three slices (the per-file fallback gathers them)."""
        if not self._digest_pending:
            return
        key, n = self.store.key, self.store.capacity
        at, size = key.at[:n], key.size[:n]
        breaks = np.concatenate([[0], np.cumsum(at[1:] != at[:-1] + np.maximum(size[:-1], 0))])
        at_list, breaks_list = at.tolist(), breaks.tolist()
        end_list = (at + np.maximum(size, 0)).tolist()
        sizes = size.astype("<i4").tobytes()
        hashes = self.store.hash[:n].tobytes()
        # In slot order: the files' tags then lie side by side, and are gathered as one run.
        files = self.files
        pending = sorted(self._digest_pending, key=lambda rel: next(iter(files[rel].slots), -1))
        facts = self._facts([files[rel].slots for rel in pending])
        for rel, file_facts in zip(pending, facts, strict=True):
            record = self.files[rel]
            slots = record.slots
            if (
                isinstance(slots, range)
                and slots
                and breaks_list[slots[-1]] == breaks_list[slots[0]]
            ):
                lo, hi = slots[0], slots[-1] + 1
                keys = key.raw(at_list[lo], end_list[hi - 1] - at_list[lo])
                record.digest = file_digest(
                    rel, sizes[4 * lo : 4 * hi], keys, hashes[16 * lo : 16 * hi], file_facts
                )
            else:
                record.digest = self._file_digest(rel, slots)
            self._digest ^= record.digest
        self._digest_pending = set()

    def digest(self) -> str:
        """Order-independent digest of every indexed entry's id, content hash and tags, and
        the title and aliases of its note."""
        with self.lock:
            self._fold_digests()
            return f"{self._digest:032x}"

    def file_digests(self) -> dict[str, str]:
        with self.lock:
            self._fold_digests()
            return {rel: f"{record.digest:032x}" for rel, record in self.files.items()}

    def counts(self) -> dict[str, int]:
        with self.lock:
            diary = sum(len(v) for v in self.days.values())
            return {"diary": diary, "wiki": len(self.index) - diary}

    def warnings(self) -> dict[str, list[str]]:
        with self.lock:
            return {p: list(r.warnings) for p, r in self.files.items() if r.warnings}

    def left_out(self) -> dict[str, str]:
        """What the last scan left out, path → why: the files it skipped and the folders it
        did not enter (a symlink leading outside, a folder it cannot list). ``status`` lists
        it and ``check`` compares it with a fresh scan's."""
        with self.lock:
            return {**self.skipped, **self.linked_dirs}


class EntriesView(Mapping[str, Entry]):
    """Every live entry by id, built on demand from the entry store (a read-only view)."""

    def __init__(self, engine: EngineReads) -> None:
        self._engine = engine

    def __getitem__(self, entry_id: str) -> Entry:
        slot = self._engine.slot_of(entry_id)
        if slot is None:
            raise KeyError(entry_id)
        return self._engine.store.entry(slot)

    def __contains__(self, entry_id: object) -> bool:
        return isinstance(entry_id, str) and self._engine.slot_of(entry_id) is not None

    def _slots(self) -> Iterator[int]:
        for record in list(self._engine.files.values()):
            yield from record.slots

    def __iter__(self) -> Iterator[str]:
        return (self._engine.store.entry_id(s) for s in self._slots())

    def __len__(self) -> int:
        return len(self._engine.index)

    def values(self) -> _Values:  # type: ignore[override]
        return _Values(self)

    def items(self) -> _Items:  # type: ignore[override]
        return _Items(self)


class _Values:
    """``EntriesView.values()``: the entries, built once each (not looked up by id)."""

    def __init__(self, view: EntriesView) -> None:
        self._view = view

    def __iter__(self) -> Iterator[Entry]:
        store = self._view._engine.store
        return (store.entry(s) for s in self._view._slots())

    def __len__(self) -> int:
        return len(self._view)


class _Items(_Values):
    def __iter__(self) -> Iterator[tuple[str, Entry]]:  # type: ignore[override]
        return ((e.id, e) for e in super().__iter__())
