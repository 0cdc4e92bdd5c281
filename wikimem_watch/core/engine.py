"""The engine: the only mutator of the index, and the one query path every shell calls.

It owns the BM25 index, the per-entry facts that filters read (kind, day, time), the note
name table that links resolve against, and what each file contributed. ``apply(paths)``
re-reads those files (an unchanged file costs one hash) and swaps their entries; ``query``
reads under the same lock, so it always sees a consistent snapshot.

Two locks (ADR-0011): ``apply_lock`` serialises appliers through read → hash → parse →
tokenize → swap, and ``lock`` is held by readers and by the swap alone. A slow or hostile
file (8 MiB of adversarial Markdown) therefore delays only the applier, never a query.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import date
from functools import partial
from pathlib import PurePosixPath

import numpy as np

from ..config import Config
from ..vectors.service import VectorService
from ..vectors.texts import embedding_texts
from .bm25 import Bm25Index
from .facts import asked_before, entry_digest, entry_epoch_days, indexed_text, make_tokenizer
from .models import Entry
from .parse import parse_note, text_hash
from .reads import EngineReads
from .scan import map_in_order
from .vault import NoteFilter, SkipFile, iter_notes, read_note

__all__ = ["ApplyStats", "Engine", "FileRecord", "entry_epoch_days", "indexed_text"]

log = logging.getLogger(__name__)

# A file whose mtime is this close to the moment it was read may change again within the
# same mtime tick (coarse clocks, FAT's 2 s): its recorded stat proves nothing, so a
# snapshot load hashes it ("racy git").
RACY_NS = 2_000_000_000
_BULK_ENTRIES = 4096


@dataclass(slots=True)
class FileRecord:
    """What one file contributed: its text hash, its entries, parse warnings, and the
    vault-relative target when the file is a symlink to another note of the vault."""

    text_hash: str
    ids: tuple[str, ...]
    warnings: tuple[str, ...] = ()
    target: str | None = None
    # (mtime_ns, size, racy) of the file as read, taken before the read: a snapshot load
    # trusts a file whose stat still matches and is not racy (ADR-0015). None: unknown.
    stat: tuple[int, int, bool] | None = None


@dataclass(slots=True)
class _Prepared:
    """One file read and parsed outside the lock: gone, skipped (``record`` None and a
    ``skip`` reason), or new entries with their tokens and embedding texts."""

    rel: str
    gone: bool = False
    skip: str = ""
    record: FileRecord | None = None
    entries: tuple[Entry, ...] = ()
    tokens: list[list[str]] = field(default_factory=list)
    embedded: list[str] = field(default_factory=list)


@dataclass(slots=True)
class ApplyStats:
    changed: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    unchanged: int = 0
    skipped: list[str] = field(default_factory=list)


class Engine(EngineReads):
    """A live index over one vault. Thread-safe: appliers take ``apply_lock`` and, for the
    swap only, the ``lock`` that queries read under."""

    def __init__(self, config: Config) -> None:
        self.config = config
        self.root = config.vault
        self.tokenizer = make_tokenizer(config)
        self.note_filter = NoteFilter(config.include or ("*",), config.exclude)
        self.lock = threading.RLock()  # readers, and the short swap of prepared files
        self.apply_lock = threading.RLock()  # serialises appliers (read + parse + swap)
        self.index = Bm25Index(config.k1, config.b)
        self.files: dict[str, FileRecord] = {}
        self.entries: dict[str, Entry] = {}
        self.skipped: dict[str, str] = {}
        self.linked_dirs: dict[str, str] = {}  # symlinked dirs leading outside: not followed
        self._links_to: dict[str, set[str]] = {}  # note → symlinks in the vault leading to it
        self.days: dict[str, list[str]] = {}
        self.names: dict[str, set[str]] = {}
        self.generation = 0
        self.stat_refreshes = 0  # file stats renewed without a change (snapshot staleness)
        self.last_change_at: float | None = None
        self._digest = 0
        # Entries restored from a snapshot whose digests are not folded into ``_digest``
        # yet: XOR commutes, so ``digest()`` folds them in later (ADR-0015).
        self._digest_pending: list[Entry] = []
        self._slot_entry: list[Entry | None] = []
        self._slot_day = np.zeros(0, dtype=np.int32)
        self._slot_wiki = np.zeros(0, dtype=bool)
        self._slot_epoch = np.zeros(0, dtype=np.float64)
        # The entries before and after each diary entry in its day file (-1: none), for the
        # neighbour term of the ranking (ADR-0009).
        self._slot_prev = np.zeros(0, dtype=np.int64)
        self._slot_next = np.zeros(0, dtype=np.int64)
        # The vector side, kept as we go when an embedder is configured (ADR-0008): entry
        # id → key of its embedded text, key → the entries sharing it, key → the text. A
        # BM25-only engine keeps none of it (at 100k entries it is ~70 MB and ~2 s of build).
        self.tracks_vectors = config.embed != "none"
        self._vector_key: dict[str, str] = {}
        self._by_key: dict[str, set[str]] = {}
        self._embed_text: dict[str, str] = {}
        self._name_keys: dict[str, set[str]] = {}  # path → the name keys it registered
        # Set by the owner (daemon or CLI) when an embedder is configured: ADR-0007.
        self.vectors: VectorService | None = None

    # ------------------------------------------------------------------ mutation

    def restore(self, files: dict[str, FileRecord], entries: list[Entry], index: Bm25Index) -> None:
        """Take over a whole index loaded from a snapshot (ADR-0015): ``index`` holds
        ``entries`` at slots 0..n-1, in the order of ``files`` and their ids. Only an empty
        engine may restore; the caller then applies the files that changed since."""
        with self.apply_lock, self.lock:
            if self.files or self.entries or self.skipped:
                raise RuntimeError("restore() needs an empty engine")
            self.index = index
            self.files = files
            embedded: list[str] = []
            start = 0
            for rel, record in files.items():
                mine = entries[start : start + len(record.ids)]
                start += len(record.ids)
                if record.target is not None:
                    self._links_to.setdefault(record.target, set()).add(rel)
                self._add_names(rel, tuple(mine))
                if self.tracks_vectors:
                    embedded.extend(embedding_texts(mine))
            self._record_entries(entries, range(len(entries)), embedded, digest=False)
            self._digest_pending = entries
            self.generation += 1
            self.last_change_at = time.time()

    def scan(self) -> ApplyStats:
        """Bring the index in line with the files on disk (initial scan or full rescan)."""
        with self.apply_lock:
            linked_dirs: dict[str, str] = {}
            on_disk = list(iter_notes(self.root, self.note_filter, linked_dirs))
            self.linked_dirs = linked_dirs
            gone = set(self.files) | set(self.skipped)
            gone.difference_update(on_disk)
            return self.apply([*on_disk, *sorted(gone)])

    def apply(self, paths: Iterable[str]) -> ApplyStats:
        """Re-read each vault-relative path and replace its entries (gone → removed).

        Reading, hashing, parsing and tokenizing happen outside the engine lock, so a query
        never waits on a file; the lock is held only to swap prepared entries in, a batch of
        at most ``_BULK_ENTRIES`` at a time. ``apply_lock`` serialises appliers, so the file
        each one reads is the one it swaps in. A symlink inside the vault is re-read with
        its target.
        """
        stats = ApplyStats()
        with self.apply_lock:
            batch: list[_Prepared] = []
            size = 0
            for prepared in self._prepare_all(self._with_links(paths)):
                if prepared is None:
                    stats.unchanged += 1
                    continue
                batch.append(prepared)
                size += len(prepared.entries)
                if size >= _BULK_ENTRIES:
                    self._swap(batch, stats)
                    batch, size = [], 0
            self._swap(batch, stats)
        return stats

    def sync_vectors(self, *, rebuild: bool = False) -> None:
        """Queue every live entry for background embedding (only missing keys cost a call).

        The daemon calls this once per applied batch, not per file: the input map is a copy
        of every live entry's text.
        """
        if self.vectors is not None:
            self.vectors.update(self.embedding_inputs(), rebuild=rebuild)

    def embedding_inputs(self) -> dict[str, str]:
        """Every live entry's vector key (content hash of its text) → that text (a copy).

        Empty unless an embedder is configured (``tracks_vectors``).
        """
        with self.lock:
            return dict(self._embed_text)

    def _with_links(self, paths: Iterable[str]) -> list[str]:
        """``paths`` (once each), then the symlinks in the vault that lead to one of them."""
        out = dict.fromkeys(paths)
        for rel in list(out):
            out.update(dict.fromkeys(sorted(self._links_to.get(rel, ()))))
        return list(out)

    def _prepare_all(self, rels: list[str]) -> Iterator[_Prepared | None]:
        """Each file prepared, in order. A cold scan (nothing indexed, so preparing a file
        changes nothing here) shares the files with a forked helper when it pays (ADR-0019)."""
        prepare = partial(self._prepare, real_root=os.path.realpath(self.root))
        if self.files or self.skipped:
            return map(prepare, rels)
        return map_in_order(rels, prepare)

    def _prepare(self, rel: str, real_root: str | None = None) -> _Prepared | None:
        """Read, hash, parse and tokenize one file, without the engine lock (``None``:
        unchanged). Only appliers write ``files``/``skipped``, and they hold ``apply_lock``."""
        if not self.note_filter.accepts(rel):
            return _Prepared(rel, gone=True)
        stat = self._stat(rel)
        try:
            follow = self.config.follow_external_symlinks
            note = read_note(self.root, rel, follow_external=follow, real_root=real_root)
        except FileNotFoundError:
            return _Prepared(rel, gone=True)
        except SkipFile as exc:
            return _Prepared(rel, skip=exc.reason)
        digest = text_hash(note.text)
        old = self.files.get(rel)
        if old is not None and old.text_hash == digest and old.target == note.target:
            if old.stat != stat:
                old.stat = stat  # same text, newer stat: a later snapshot load trusts it
                self.stat_refreshes += 1
            return None
        parsed = parse_note(rel, note.text)
        warnings = parsed.warnings + ((note.warning,) if note.warning else ())
        for w in warnings:
            log.warning("%s: %s", rel, w)
        ids = tuple(e.id for e in parsed.entries)
        return _Prepared(
            rel,
            record=FileRecord(digest, ids, warnings, note.target, stat),
            entries=parsed.entries,
            tokens=self._tokens(parsed.entries),
            embedded=embedding_texts(parsed.entries) if self.tracks_vectors else [],
        )

    def _tokens(self, entries: tuple[Entry, ...]) -> list[list[str]]:
        """The index terms of one file's entries (ADR-0009: headings as a field, and a diary
        entry read with the question the entry before it ended with)."""
        weight = self.config.heading_weight
        asked = asked_before(entries) if self.config.question_context else [""] * len(entries)
        return [
            self.tokenizer(indexed_text(e, weight, q)) for e, q in zip(entries, asked, strict=True)
        ]

    def _stat(self, rel: str) -> tuple[int, int, bool] | None:
        """(mtime_ns, size, racy) of a note, through symlinks; None when it cannot be had."""
        try:
            st = os.stat(os.path.join(self.root, *rel.split("/")))
        except (OSError, ValueError):
            return None
        return st.st_mtime_ns, st.st_size, st.st_mtime_ns >= time.time_ns() - RACY_NS

    def _swap(self, batch: list[_Prepared], stats: ApplyStats) -> None:
        """Put prepared files into the index under the engine lock (the only part readers
        wait for)."""
        if not batch:
            return
        with self.lock:
            added: list[Entry] = []
            tokens: list[list[str]] = []
            embedded: list[str] = []
            changed = len(stats.changed) + len(stats.removed)
            for p in batch:
                if p.gone:
                    if self._drop(p.rel):
                        stats.removed.append(p.rel)
                elif p.record is None:
                    self._drop(p.rel)
                    self.skipped[p.rel] = p.skip
                    stats.skipped.append(p.rel)
                else:
                    self._drop(p.rel)
                    added.extend(p.entries)
                    tokens.extend(p.tokens)
                    embedded.extend(p.embedded)
                    self.files[p.rel] = p.record
                    if p.record.target is not None:
                        self._links_to.setdefault(p.record.target, set()).add(p.rel)
                    self._add_names(p.rel, p.entries)
                    stats.changed.append(p.rel)
            self._add_entries(added, tokens, embedded)
            self.index.flush()
            if len(stats.changed) + len(stats.removed) > changed:
                self.generation += 1
                self.last_change_at = time.time()

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
        for entry_id in record.ids:
            entry = self.entries.pop(entry_id)
            slot = self.index.slot(entry_id)
            self.index.remove(entry_id)
            if slot is not None:
                self._slot_entry[slot] = None
            self._digest ^= entry_digest(entry)
            key = self._vector_key.pop(entry_id, None)
            if key is not None:
                same = self._by_key[key]
                same.discard(entry_id)
                if not same:
                    del self._by_key[key]
                    del self._embed_text[key]
            if slot is not None:
                self._unlink(slot)
            if entry.date is not None:
                day = self.days[entry.date]
                day.remove(entry_id)
                if not day:
                    del self.days[entry.date]
        for key in self._name_keys.pop(rel, ()):
            paths = self.names[key]
            paths.discard(rel)
            if not paths:
                del self.names[key]
        return True

    def _add_entries(
        self, entries: list[Entry], tokens: list[list[str]], embedded: list[str]
    ) -> None:
        """Index a batch of entries (bulk index updates) and record their facts.

        ``tokens`` holds each entry's tokens; ``embedded`` the text each entry's vector is
        made from, or nothing when vectors are not tracked.
        """
        slots = self.index.upsert_many(
            [(e.id, toks) for e, toks in zip(entries, tokens, strict=True)]
        )
        self._record_entries(entries, slots, embedded)

    def _record_entries(
        self,
        entries: Sequence[Entry],
        slots: Sequence[int],
        embedded: Sequence[str],
        *,
        digest: bool = True,
    ) -> None:
        """Record the facts of entries already in the index at ``slots`` (with ``digest``
        False, the caller defers their digests to ``_digest_pending``)."""
        self._grow(self.index.capacity)
        touched_days: set[str] = set()
        for entry, slot in zip(entries, slots, strict=True):
            self._slot_entry[slot] = entry
            self._slot_wiki[slot] = entry.kind == "wiki"
            self._slot_day[slot] = date.fromisoformat(entry.date).toordinal() if entry.date else 0
            self._slot_epoch[slot] = entry_epoch_days(entry)
            self.entries[entry.id] = entry
            if digest:
                self._digest ^= entry_digest(entry)
            if entry.date is not None:
                self.days.setdefault(entry.date, []).append(entry.id)
                touched_days.add(entry.date)
        for day in touched_days:
            self.days[day].sort(key=lambda i: (self.entries[i].time or "", self.entries[i].line))
            self._link_day(day)
        if not self.tracks_vectors:
            return
        for entry, text in zip(entries, embedded, strict=True):
            key = text_hash(text)  # the vector cache key: the embedded text, never a path
            self._vector_key[entry.id] = key
            self._by_key.setdefault(key, set()).add(entry.id)
            self._embed_text[key] = text

    def _link_day(self, day: str) -> None:
        """Point each entry of a day at the entries before and after it in the same file."""
        last: dict[str, int] = {}  # path → slot of its latest entry so far
        for entry_id in self.days[day]:
            slot = self.index.slot(entry_id)
            assert slot is not None
            path = self.entries[entry_id].path
            before = last.get(path, -1)
            self._slot_prev[slot] = before
            self._slot_next[slot] = -1
            if before >= 0:
                self._slot_next[before] = slot
            last[path] = slot

    def _unlink(self, slot: int) -> None:
        """Cut a removed entry out of its neighbours' links (its slot may be reused)."""
        before, after = int(self._slot_prev[slot]), int(self._slot_next[slot])
        if before >= 0:
            self._slot_next[before] = after
        if after >= 0:
            self._slot_prev[after] = before
        self._slot_prev[slot] = self._slot_next[slot] = -1

    def _grow(self, capacity: int) -> None:
        have = len(self._slot_entry)
        if capacity <= have:
            return
        extra = max(capacity - have, have, 1024)
        self._slot_entry.extend([None] * extra)
        self._slot_day = np.concatenate([self._slot_day, np.zeros(extra, dtype=np.int32)])
        self._slot_wiki = np.concatenate([self._slot_wiki, np.zeros(extra, dtype=bool)])
        self._slot_epoch = np.concatenate([self._slot_epoch, np.full(extra, np.nan)])
        self._slot_prev = np.concatenate([self._slot_prev, np.full(extra, -1, dtype=np.int64)])
        self._slot_next = np.concatenate([self._slot_next, np.full(extra, -1, dtype=np.int64)])

    def _add_names(self, rel: str, entries: tuple[Entry, ...]) -> None:
        base = rel[:-3] if rel.endswith(".md") else str(PurePosixPath(rel).with_suffix(""))
        keys = {rel.lower(), base.lower(), base.rsplit("/", 1)[-1].lower()}
        if entries:
            keys.add((entries[0].title or "").lower())
            keys.update(a.lower() for a in entries[0].aliases)
        keys.discard("")
        self._name_keys[rel] = keys
        for key in keys:
            self.names.setdefault(key, set()).add(rel)
