"""The engine: the only mutator of the index, and the one query path every shell calls.

It owns the BM25 index, the entry store (every entry's fields as columns, ADR-0018), the
per-day lists that windows read, the note name table that links resolve against, and what
each file contributed. ``apply(paths)`` re-reads those files (an unchanged file costs one
hash) and swaps their entries; ``query`` reads under the same lock, so it always sees a
consistent snapshot.

Two locks (ADR-0011): ``apply_lock`` serialises appliers through read → hash → parse →
tokenize → swap, and ``lock`` is held by readers and by the swap alone. A slow or hostile
file (8 MiB of adversarial Markdown) therefore delays only the applier, never a query.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from array import array
from collections.abc import Callable, Generator, Iterable, Iterator
from dataclasses import dataclass, field
from functools import partial

import numpy as np

from ..config import Config
from ..vectors.texts import embedding_texts
from .bm25 import Bm25Index
from .days import restore_days
from .engine_vectors import EngineVectors
from .facts import entry_epoch_days, indexed_text
from .links import EngineLinks, LinkMap
from .names import Names, add_names, name_keys, remove_names
from .prepare import FilePreparer, FileRecord, Prepared
from .reads import EngineReads, EntriesView
from .scan import map_in_order
from .store import EntryStore
from .vault import iter_notes
from .vector_keys import VectorKeys

TYPE_CHECKING = False
if TYPE_CHECKING:  # the vector side loads only when an embedder is configured
    import numpy.typing as npt

    from ..vectors.service import VectorService

__all__ = ["ApplyStats", "Engine", "FileRecord", "entry_epoch_days", "indexed_text"]

log = logging.getLogger(__name__)

# Entries swapped in at a time. A batch's entries and token lists (~3 kB an entry) are freed
# after its swap, but the small objects the swap keeps (new terms, records) land among them,
# so Python's allocator cannot return their room: with 4096 a cold build of 100k entries
# peaked ~18 MB higher than with 1024, which costs ~0.5-1 s more CPU there (ADR-0018).
_BULK_ENTRIES = 1024


@dataclass(slots=True)
class ApplyStats:
    changed: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    unchanged: int = 0
    skipped: list[str] = field(default_factory=list)
    stopped: bool = False  # ``stop`` ended the apply before its last file


class Engine(EngineReads, EngineLinks, EngineVectors):
    """A live index over one vault. Thread-safe: appliers take ``apply_lock`` and, for the
    swap only, the ``lock`` that queries read under."""

    def __init__(self, config: Config) -> None:
        self.config = config
        self.root = config.vault
        self.preparer = FilePreparer(config)  # reads, parses and tokenizes a note
        self.tokenizer = self.preparer.tokenizer
        self.note_filter = self.preparer.note_filter
        self.lock = threading.RLock()  # readers, and the short swap of prepared files
        self.apply_lock = threading.RLock()  # serialises appliers (read + parse + swap)
        self.index = Bm25Index(config.k1, config.b)
        self.store = EntryStore()
        self.files: dict[str, FileRecord] = {}
        self.entries = EntriesView(self)
        self.skipped: dict[str, str] = {}
        self.linked_dirs: dict[str, str] = {}  # symlinked dirs leading outside: not followed
        self._links_to: dict[str, set[str]] = {}  # note → symlinks in the vault leading to it
        self._dangling: dict[str, str] = {}  # dangling symlink → its note (also in _links_to)
        self.days: dict[str, array[int]] = {}  # date → its diary slots, by (time, line)
        self._names: Names | None = {}  # None until first needed after a restore
        self._links: LinkMap | None = None  # links.py: built when first read, then kept
        self._dropped_names: dict[str, frozenset[str]] = {}  # in a swap, for the link map
        self.generation = 0
        self.stat_refreshes = 0  # file stats renewed without a change (snapshot staleness)
        self.last_change_at: float | None = None
        self._digest = 0
        # Files restored from a snapshot whose digests are not folded into ``_digest`` yet:
        # XOR commutes, so ``digest()`` folds them in when first asked (ADR-0015).
        self._digest_pending: set[str] = set()
        self._term_ids: dict[int, tuple[bytes, array[int]]] = {}  # for ``information``
        self._term_ids_at = 0
        # The vector side, kept as we go when an embedder is configured (ADR-0008): each
        # slot's vector key, a column saved in the index snapshot (core/vector_keys.py). A
        # BM25-only engine keeps none (at 1M entries: 16 MB, and hashing every text).
        self.tracks_vectors = self.preparer.tracks_vectors
        self.vector_keys = VectorKeys()
        self.vector_keys_missing = False  # restored from a snapshot saved without them
        # Keys set and dropped since the last ``sync_vectors`` (None: look at every key).
        self._fresh_vector_keys: set[str] | None = None
        self._removed_vector_keys = 0
        # Set by the owner (daemon or CLI) when an embedder is configured: ADR-0007.
        self.vectors: VectorService | None = None

    # ------------------------------------------------------------------ mutation

    def restore(
        self,
        files: dict[str, FileRecord],
        store: EntryStore,
        index: Bm25Index,
        vector_keys: npt.NDArray[np.uint8] | None = None,
    ) -> None:
        """Take over a whole index loaded from a snapshot (ADR-0015): ``store`` and
        ``index`` hold the entries at slots 0..n-1, in the order of ``files`` and their
        slots; ``vector_keys`` their vector keys when the snapshot has them. Only an empty
        engine may restore; the caller then applies the files that changed since. The name
        table and the digests are built when first needed."""
        with self.apply_lock, self.lock:
            if self.files or self.skipped or len(self.index):
                raise RuntimeError("restore() needs an empty engine")
            self.index, self.store, self.files = index, store, files
            self._term_ids.clear()  # ids of the index replaced
            self._fresh_vector_keys = None  # the cache may lack any of them
            for rel, record in files.items():
                if record.target is not None:
                    self._links_to.setdefault(record.target, set()).add(rel)
            self._names = None
            self._links = None
            self._digest_pending = set(files)
            self._restore_days()
            self.vector_keys_missing = self.tracks_vectors and vector_keys is None
            if self.tracks_vectors and vector_keys is not None:
                self.vector_keys.load(np.arange(vector_keys.shape[0]), vector_keys)
            elif self.tracks_vectors:  # a snapshot made without an embedder: hash the texts
                for record in files.values():
                    slots = list(record.slots)
                    texts = embedding_texts([store.entry(s) for s in slots])
                    self.vector_keys.set(slots, texts)
            self.generation += 1
            self.last_change_at = time.time()

    def _restore_days(self) -> None:
        """Days and neighbour links of a restored store (``days.restore_days``)."""
        counts = [len(record.slots) for record in self.files.values()]
        restored = restore_days(self.store, self.index.capacity, counts, list(self.files))
        self.days.update(restored)

    def scan(self) -> ApplyStats:
        """Bring the index in line with the files on disk (initial scan or full rescan)."""
        with self.apply_lock:
            linked_dirs: dict[str, str] = {}
            on_disk = list(iter_notes(self.root, self.note_filter, linked_dirs))
            self.linked_dirs = linked_dirs
            gone = set(self.files) | set(self.skipped)
            gone.difference_update(on_disk)
            return self.apply([*on_disk, *sorted(gone)])

    @property
    def is_cold(self) -> bool:
        """Nothing recorded yet: the next ``apply`` is a cold scan (ADR-0019)."""
        return not (self.files or self.skipped)

    def apply(self, paths: Iterable[str], stop: Callable[[], bool] | None = None) -> ApplyStats:
        """Re-read each vault-relative path and replace its entries (gone → removed).

        Reading, hashing, parsing and tokenizing happen outside the engine lock, so a query
        never waits on a file; the lock is held only to swap prepared entries in, a batch of
        at most ``_BULK_ENTRIES`` at a time. ``apply_lock`` serialises appliers, so the file
        each one reads is the one it swaps in. A symlink inside the vault is re-read with
        its target. ``stop``, asked after each batch, ends the apply early when it says so:
        the files not swapped in yet are left as they were.
        """
        from .heap import large_blocks_mapped  # here, not at the top: for a cold scan

        stats = ApplyStats()
        with self.apply_lock:
            cold = self.is_cold
            # A cold scan's growing arrays would leave holes in the heap (ADR-0018), and its
            # postings are laid out once, at the end (a query before then settles them).
            with large_blocks_mapped(cold):
                if cold:
                    with self.lock:
                        self.index.start_bulk()
                try:
                    self._apply_prepared(paths, stats, stop)
                finally:
                    with self.lock:
                        self.index.settle()
        return stats

    def _apply_prepared(
        self, paths: Iterable[str], stats: ApplyStats, stop: Callable[[], bool] | None
    ) -> None:
        """Prepare ``paths`` and swap them in, batch by batch (``apply``'s loop)."""
        batch: list[Prepared] = []
        size = 0
        prepared_all = self._prepare_all(self.with_links(paths))
        try:
            for prepared in prepared_all:
                if prepared is None:
                    stats.unchanged += 1
                    continue
                batch.append(prepared)
                size += len(prepared.entries)
                if size >= _BULK_ENTRIES:
                    self._swap(batch, stats)
                    batch, size = [], 0
                    if stop is not None and stop():
                        stats.stopped = True
                        break
            self._swap(batch, stats)
        finally:
            if isinstance(prepared_all, Generator):
                prepared_all.close()  # a helper process ends with it (core/scan.py)

    def with_links(self, paths: Iterable[str]) -> list[str]:
        """``paths`` (once each), then the symlinks in the vault that lead to one of them:
        what applying ``paths`` applies. The caller holds ``apply_lock``."""
        out = dict.fromkeys(paths)
        for rel in list(out):
            out.update(dict.fromkeys(sorted(self._links_to.get(rel, ()))))
        return list(out)

    def links_reading(self, rel: str, *, below: bool = False) -> list[str]:
        """The symlinks in the vault that lead to ``rel`` (``below``: to a path below the
        folder ``rel``), a note there or not: a change of a target no walk lists (in a
        dot-folder, a ``.txt``) is a change of the symlinks that read it. Any thread may
        ask (the watcher's does, for each file it would drop)."""
        if not self._links_to:  # most vaults have no symlinks: no lock per dropped event
            return []
        with self.lock:
            if not below:
                return sorted(self._links_to.get(rel, ()))
            prefix = rel.rstrip("/") + "/"
            return sorted(
                link
                for target, links in self._links_to.items()
                if target.startswith(prefix)
                for link in links
            )

    def _prepare_all(self, rels: list[str]) -> Iterator[Prepared | None]:
        """Each file prepared, in order. A cold scan (nothing recorded, so every file is
        prepared as new and nothing here changes) shares the files with a helper process
        when it pays (ADR-0019)."""
        real_root = os.path.realpath(self.root)
        if not self.is_cold:
            return map(partial(self._prepare, real_root=real_root), rels)
        return map_in_order(rels, partial(self.preparer, real_root=real_root))

    def _prepare(self, rel: str, real_root: str | None = None) -> Prepared | None:
        """Read, hash, parse and tokenize one file, without the engine lock (``None``:
        unchanged). Only appliers write ``files``/``skipped``, and they hold ``apply_lock``."""
        prepared = self.preparer(rel, real_root, self.files.get(rel))
        if not prepared.same:
            return prepared
        old, new = self.files[rel], prepared.record
        assert new is not None  # ``same`` carries the stat of the read
        if old.stat != new.stat:
            old.stat = new.stat  # same text, newer stat: a later snapshot load trusts it
            self.stat_refreshes += 1
        return None

    def _swap(self, batch: list[Prepared], stats: ApplyStats) -> None:
        """Put prepared files into the index under the engine lock (the only part readers
        wait for)."""
        if not batch:
            return
        with self.lock:
            added: list[Prepared] = []
            changed = len(stats.changed) + len(stats.removed)
            unindexed = False  # an indexed file now skipped (unreadable, binary, too big)
            for p in batch:
                if p.gone:
                    if self._drop(p.rel):
                        stats.removed.append(p.rel)
                elif p.record is None:
                    unindexed |= self._drop(p.rel)
                    self.skipped[p.rel] = p.skip
                    stats.skipped.append(p.rel)
                else:
                    self._drop(p.rel)
                    added.append(p)
                    stats.changed.append(p.rel)
                self._track_dangling(p)  # after ``_drop``, which forgets the old target
            self._add(added)
            if self._dropped_names:  # a note gone (or unindexed) for good
                self._links = None
                self._dropped_names.clear()
            self.index.flush()
            if self.store.wasteful():
                self.store.compact(self.index.live_slots())
            if len(stats.changed) + len(stats.removed) > changed or unindexed:
                self.generation += 1  # also what makes the next snapshot record it
                self.last_change_at = time.time()

    def _add(self, prepared: list[Prepared]) -> None:
        """Index the entries of prepared files (one bulk index update) and record them."""
        tokens = [t for p in prepared for t in p.tokens]
        slots = self.index.add_many(tokens)
        entries = [e for p in prepared for e in p.entries]
        self.store.put(slots, entries, [a for p in prepared for a in p.asks])
        if self._links is not None:
            self._links.mark(s for s, e in zip(slots, entries, strict=True) if e.links)
        start = 0
        for p in prepared:
            assert p.record is not None
            record = p.record
            record.slots = array("i", slots[start : start + len(p.entries)])
            start += len(p.entries)
            self.files[p.rel] = record
            if record.target is not None:
                self._links_to.setdefault(record.target, set()).add(p.rel)
            if self._names is not None or self._links is not None:
                first = p.entries[0] if p.entries else None
                keys = name_keys(
                    p.rel, first.title if first else None, first.aliases if first else ()
                )
                if self._names is not None:
                    add_names(self._names, p.rel, keys)
                if self._dropped_names.pop(p.rel, None) != frozenset(keys):
                    self._links = None  # a name came or went: any link may lead elsewhere
            if self.tracks_vectors:
                self._track_vectors(list(record.slots), p.embedded)
        records = [(p.rel, p.record) for p in prepared if p.record is not None]
        digests = self._file_digests([(rel, record.slots) for rel, record in records])
        for (_, record), digest in zip(records, digests, strict=True):
            record.digest = digest
            self._digest ^= digest
        touched: set[str] = set()
        for slot, entry in zip(slots, entries, strict=True):
            day = entry.date  # as the store gives it back (``put`` checks)
            if day is not None:
                self.days.setdefault(day, array("i")).append(slot)
                touched.add(day)
        for day in touched:
            # Entries of two files of one day (diary/2026-01-01.md, diary/x/2026-01-01.md)
            # may share a time and a line: the path orders them, not which was applied last,
            # so a day reads as a fresh scan (and a snapshot load: ``_restore_days``) reads it.
            self.days[day] = array("i", self._day_order(self.days[day]))
            self._link_day(day)

    def _track_dangling(self, p: Prepared) -> None:
        """Keep a dangling symlink in ``_links_to``: the note it leads to, made again (or
        moved back), applies it too, as a fresh scan would read it."""
        gone_to = self._dangling.pop(p.rel, None)
        if gone_to is not None:
            links = self._links_to[gone_to]
            links.discard(p.rel)
            if not links:
                del self._links_to[gone_to]
        if p.dangling is not None:
            self._dangling[p.rel] = p.dangling
            self._links_to.setdefault(p.dangling, set()).add(p.rel)

    def _drop(self, rel: str) -> bool:
        self.skipped.pop(rel, None)
        record = self.files.pop(rel, None)
        if record is None:
            return False
        if record.target is not None:
            links = self._links_to[record.target]
            links.discard(rel)
            if not links:
                del self._links_to[record.target]
        slots = list(record.slots)
        entries = [self.store.entry(s) for s in slots]
        # The index keeps no list of each document's terms: they are derived again.
        for slot, tokens in zip(slots, self.preparer.tokens(entries), strict=True):
            self.index.remove(slot, tokens)
        if rel in self._digest_pending:
            self._digest_pending.discard(rel)  # never folded in
        else:
            self._digest ^= record.digest
        self.vector_keys.drop(slots)
        # The term ids ``information`` remembers are checked against the content hash, which
        # leaves out the note's frontmatter tags: an entry of the same text that reuses the
        # slot with other tags would be read by the old ones.
        for slot in slots:
            self._term_ids.pop(slot, None)
        self._removed_vector_keys += len(slots) if self.tracks_vectors else 0
        for slot, entry in zip(slots, entries, strict=True):
            self._unlink(slot)
            if entry.date is not None:
                day = self.days[entry.date]
                day.remove(slot)
                if not day:
                    del self.days[entry.date]
        if self._names is not None or self._links is not None:
            first = entries[0] if entries else None
            keys = name_keys(rel, first.title if first else None, first.aliases if first else ())
            if self._names is not None:
                remove_names(self._names, rel, keys)
            if self._links is not None:
                self._links.mark(s for s, e in zip(slots, entries, strict=True) if e.links)
                self._dropped_names[rel] = frozenset(keys)
        self.store.drop(slots)
        return True

    def _day_order(self, slots: Iterable[int]) -> list[int]:
        """A day's entries in time order. An entry with no time of day (``## 晚饭后``) takes
        the time of the timed entry above it in its file, so it keeps its place after it
        (none above: before every timed one); then the line, then the path."""
        minute, line, path = self.store.minute, self.store.line, self.store.path
        files: dict[str | None, list[int]] = {}
        for slot in slots:
            files.setdefault(path[slot], []).append(slot)
        at: dict[int, int] = {}
        for group in files.values():
            last = -1
            for slot in sorted(group, key=line.item):
                last = m if (m := minute.item(slot)) >= 0 else last
                at[slot] = last
        return sorted(at, key=lambda s: (at[s], line.item(s), path[s]))

    def _link_day(self, day: str) -> None:
        """Point each entry of a day at the entries before and after it in the same file."""
        last: dict[str, int] = {}  # path → slot of its latest entry so far
        prev, after = self.store.prev, self.store.next
        for slot in self.days[day]:
            path = self.store.path[slot]
            assert path is not None
            before = last.get(path, -1)
            prev[slot] = before
            after[slot] = -1
            if before >= 0:
                after[before] = slot
            last[path] = slot

    def _unlink(self, slot: int) -> None:
        """Cut a removed entry out of its neighbours' links (its slot may be reused)."""
        prev, after = self.store.prev, self.store.next
        before, nxt = int(prev[slot]), int(after[slot])
        if before >= 0:
            after[before] = nxt
        if nxt >= 0:
            prev[nxt] = before
        prev[slot] = after[slot] = -1
