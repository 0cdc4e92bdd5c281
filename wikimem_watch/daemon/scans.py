"""The daemon's view of the vault on disk: the start (from the index snapshot, or cold), the
watcher's change sets, the safety rescan that repairs what the OS did not report, and how
each of them applies files (in chunks; a first scan in bulk) beside the write path.

A mixin of :class:`~wikimem_watch.daemon.service.Daemon`, which owns the state; every method
runs on its writer thread but ``_applied``, which the write path calls on its own. The
safety rescan is cheap: it walks the vault and ``stat``s each note (no reads), and
re-applies only paths whose (mtime, size, inode) changed since the last walk or whose
presence differs from the index.

A file the rescan re-applies with a change is not yet one the watcher missed: the rescan
may have come between a save and the watcher's report of it (held for the debounce, or not
read from the OS yet), and applied it first. It is called missed (a warning) only when the
watcher has neither reported it nor still holds it ``MISSED_GRACE_S`` later.
"""

from __future__ import annotations

import contextlib
import logging
import os
import stat
import threading
import time
from collections.abc import Iterable, Iterator

from ..config import Config
from ..core.engine import ApplyStats, Engine
from ..core.heap import release_free_heap
from ..core.snapshot import disk_stats, no_gc, restore_engine, save_snapshot
from ..core.vault import UNREADABLE_DIR, iter_notes, linked_out, notes_below
from .subscriptions import ChangeFeed
from .watcher import ChangeSet, Watcher

__all__ = ["StatKey", "VaultScans"]

log = logging.getLogger(__name__)

StatKey = tuple[int, int, int, int]  # prepare.stat_key: (mtime_ns, size, inode, ctime_ns)
CHUNK_FILES = 64  # files applied per engine-lock hold while scanning: queries stay responsive
# How long the watcher has to report a change the safety rescan applied before the rescan
# calls it missed: the debounce holds a change up to its ``max_wait`` (1 s), watchdog holds
# a move out of the vault 0.5 s to pair it, the polling observer looks once a second.
MISSED_GRACE_S = 5.0


class VaultScans:
    """Scans and rescans of the vault, for the daemon's writer thread."""

    engine: Engine
    config: Config
    cache_problem: str | None
    snapshot: dict[str, object]
    _saved: tuple[int, int] | None
    saving_snapshot: bool = False
    _stats: dict[str, StatKey]
    _last_rescan: float
    # Files the safety rescan changed that the watcher has not reported since (→ "changed" or
    # "removed"), and when the ones left are called missed (``_report_missed``).
    _unreported: dict[str, str]
    _unreported_until: float
    watcher: Watcher
    scan_files: int | None
    feed: ChangeFeed
    _stop_requested: bool
    _writes_waiting: int
    _writes_done: threading.Condition
    _restored: threading.Event
    state: str

    def _applied(self, rel: str) -> int:
        """Apply a file the write path just wrote (on the caller's thread: the engine's
        ``apply_lock`` orders it with the writer thread); the generation that holds it."""
        self._restored.wait()  # an engine filled from the snapshot first, not after
        with self._between_applies():
            stats = self.feed.apply([rel])
        if (stats.changed or stats.removed) and self.state != "scanning":
            # During the first scan the vectors wait for it to end: a sync over a part of the
            # vault would take the rest's vectors for dead ones and rewrite them away.
            self.engine.sync_vectors()
        return self.engine.generation

    @contextlib.contextmanager
    def _between_applies(self) -> Iterator[None]:
        """``apply_lock``, for a write or a new subscription: a scan lets it in after its
        batch or chunk in hand instead of making it wait for the whole scan."""
        with self._writes_done:
            self._writes_waiting += 1
        try:
            with self.engine.apply_lock:
                yield
        finally:
            with self._writes_done:
                self._writes_waiting -= 1
                self._writes_done.notify_all()

    def _indexed_hash(self, rel: str) -> str | None:
        """The text hash of ``rel`` as the index holds it (None: not indexed)."""
        record = self.engine.files.get(rel)
        return None if record is None else record.text_hash

    def _apply(self, paths: Iterable[str], *, external: bool = False) -> ApplyStats:
        """Apply in chunks so readers get the lock between them; merge the stats.
        ``external``: changes the watcher found, journaled (ADR-0016).

        A cold scan is one apply: its postings are laid out once, and a helper process may
        take a share of the files (ADR-0019). It ends after its batch in hand when a stop is
        asked or a write is waiting; the files it has not reached are then applied in chunks
        (so a write waits for one batch at most). Queries go on between its batches."""
        todo = list(dict.fromkeys(paths))
        many = external and len(todo) > CHUNK_FILES  # a move may span two chunks
        with self.feed.pairing_moves() if many else contextlib.nullcontext():
            total = self._apply_chunks(todo, external)
        if total.changed or total.removed:
            self.engine.sync_vectors()  # background; only hashes missing from the cache cost
        return total

    def _apply_chunks(self, todo: list[str], external: bool) -> ApplyStats:
        """``_apply``'s loop: ``todo`` a chunk at a time (a cold scan in one), stats merged."""
        total = ApplyStats()
        while todo and not self._stop_requested:  # a stop: the next start rescans the rest
            self._let_writes_in()
            cold = self.engine.is_cold
            chunk = todo if cold else todo[:CHUNK_FILES]
            stop = self._give_way if cold else self._stopping
            stats = self.feed.apply(chunk, external=external, stop=stop)
            total.changed += stats.changed
            total.removed += stats.removed
            total.unchanged += stats.unchanged
            total.skipped += stats.skipped
            if stats.stopped:  # the files it reached are recorded: not cold any more
                done = {*stats.changed, *stats.removed, *stats.skipped}
                todo = [rel for rel in todo if rel not in done]
            else:
                todo = todo[len(chunk) :]
        return total

    def _stopping(self) -> bool:
        return self._stop_requested

    def _let_writes_in(self) -> None:
        """Wait for the writes waiting for ``apply_lock`` to be applied: a lock released and
        taken again at once by this thread would not let them in."""
        with self._writes_done:
            self._writes_done.wait_for(lambda: not self._writes_waiting or self._stop_requested)

    def _give_way(self) -> bool:
        """End a scan in bulk after its batch in hand: stopping, or a write is waiting."""
        return self._stop_requested or self._writes_waiting > 0

    def _initial_scan(self) -> None:
        """Start from the index snapshot when there is a usable one and re-read only the
        files whose stat changed since (ADR-0015); else scan cold. The writer saves a new
        snapshot once the daemon is ready."""
        path = self.config.snapshot_path
        if path is None or self.cache_problem is not None:
            self._journal_unknown()  # before ``_restored``: ahead of every write's line
            self._restored.set()
            self._scan_chunked()
            return
        # A write waits for the restore (``_restored``, and ``apply_lock`` against one that
        # came before): one applied first would leave the engine no longer empty, and the
        # snapshot unusable. Writes go on during a cold scan, between its batches.
        try:
            with self.engine.apply_lock:
                stats = self._stat_walk()
                on_disk = stats
                # A write applied before: the files are read as after any change, cold.
                empty = not (self.engine.files or self.engine.skipped)
                stale = restore_engine(self.engine, path, on_disk) if empty else None
                if stale is None:
                    self._journal_unknown()
        finally:
            self._restored.set()
        self.snapshot.update(loaded=stale is not None, reread=None if stale is None else len(stale))
        if stale is not None and not self.engine.vector_keys_missing:
            self._saved = (self.engine.generation, self.engine.stat_refreshes)
        todo = list(stats) if stale is None else stale
        if not empty:  # and a file the write made that has gone since
            todo += sorted((set(self.engine.files) | set(self.engine.skipped)) - set(stats))
        self.scan_files = len(todo)
        with no_gc():  # millions of objects and no cycles: ~10% of a cold scan
            # What the snapshot says changed while no daemon ran was changed by someone else:
            # journaled, as the safety rescan's changes are (DESIGN §5: every applied
            # external change). A cold scan knows no earlier state: ``_journal_unknown``.
            applied = self._apply(todo, external=stale is not None)
        if stale is not None and not (applied.changed or applied.removed):
            # Nothing re-read, so nothing has synced: the cache may still lack every key (an
            # embedder added since the snapshot was written, or the vector files deleted).
            self.engine.sync_vectors()
        release_free_heap()  # what the scan freed would stay resident for good
        self._stats = stats
        self._last_rescan = time.monotonic()

    def _journal_unknown(self) -> None:
        """A start with no usable snapshot knows nothing of what changed while no daemon
        ran: one ``reset`` line says so to a follower of the journal (which then re-reads
        what it follows), rather than a create for every note or silence."""
        if self.feed.journal is not None:
            self.feed.journal.unknown_changes()

    def _save_snapshot(self) -> None:
        """Write the snapshot when the index (or a file's stat) changed since the last one."""
        if self.config.snapshot_path is None or self.cache_problem is not None:
            return
        now = (self.engine.generation, self.engine.stat_refreshes)
        if now == self._saved:
            return
        self.saving_snapshot = True  # a stop waits for this (``SNAPSHOT_JOIN_S``)
        try:
            if save_snapshot(self.engine):
                self._saved = now
                self.snapshot["saved_at"] = time.time()
        finally:
            self.saving_snapshot = False

    def _scan_chunked(self, *, external: bool = False) -> ApplyStats:
        """``engine.scan()`` in chunks, refreshing the safety-rescan stat snapshot.
        ``external``: a rescan for events the watcher lost (or a ``reindex``), journaled."""
        stats = self._stat_walk()
        known = set(self.engine.files) | set(self.engine.skipped)
        todo = [*stats, *sorted(known - set(stats))]
        self.scan_files = len(todo)
        result = self._apply(todo, external=external)
        self._stats = stats
        self._last_rescan = time.monotonic()
        return result

    def _apply_changes(self, changes: ChangeSet) -> None:
        if changes.rescan:
            log.info("full rescan (events were lost or too many at once)")
            self._scan_chunked(external=True)  # a git checkout's files are journaled too
            return
        paths = set(changes.paths)
        for rel in changes.dirs:
            paths.update(self._under(rel))
        paths |= self._hard_links(paths)
        self._reported(changes, paths)
        stats = self._apply(sorted(paths), external=True)
        self._log_skipped(stats.skipped)
        if stats.changed or stats.removed:
            log.debug("applied %d changed, %d removed", len(stats.changed), len(stats.removed))

    def _hard_links(self, paths: Iterable[str]) -> set[str]:
        """The indexed notes that are the same file as one of ``paths`` (hard links): a
        file written in place through one of its names changes them all, and the OS names
        only that one (the others kept their old text until the safety rescan). A ``stat``
        per path; the index is looked through only for a file with more than one link."""
        inodes: set[int] = set()
        for rel in paths:
            try:
                st = os.stat(os.path.join(self.config.vault, *rel.split("/")))
            except (OSError, ValueError):
                continue
            if st.st_nlink > 1 and stat.S_ISREG(st.st_mode):
                inodes.add(st.st_ino)
        if not inodes:
            return set()
        with self.engine.lock:  # the write path applies on its own thread
            files = list(self.engine.files.items())
        return {rel for rel, record in files if record.stat and record.stat[3] in inodes}

    def _log_skipped(self, paths: Iterable[str]) -> None:
        """Log the files a change left out of the index, as a parse warning is: the first
        scan's are told with the ready line, and a note made binary or a FIFO later was
        dropped without a word in the log."""
        for rel in paths:
            reason = self.engine.skipped.get(rel)
            if reason is not None:
                log.warning("skipped %s: %s", rel, reason)

    def _under(self, rel_dir: str) -> list[str]:
        """Indexed paths below a moved/deleted/created directory, plus the notes now there;
        and the path itself when a note is there now (a polling observer pairs a deleted
        folder and a new note by their inode, and reports the folder moved onto the note)."""
        prefix = rel_dir.rstrip("/") + "/"
        with self.engine.lock:
            out = [p for p in (*self.engine.files, *self.engine.skipped) if p.startswith(prefix)]
        linked: dict[str, str] = {}
        out.extend(notes_below(self.config.vault, rel_dir, self.engine.note_filter, linked))
        self._relisted(rel_dir, linked)
        if self.engine.note_filter.accepts(rel_dir) and not os.path.isdir(
            os.path.join(self.config.vault, *rel_dir.split("/"))
        ):
            out.append(rel_dir)  # applied as any path: read if a note, dropped if gone
        return out

    def _relisted(self, rel_dir: str, linked: dict[str, str]) -> None:
        """``status`` names the folders at or below ``rel_dir`` the walk does not enter now
        (``linked``: those that cannot be listed, a ``chmod`` of one re-lists it; those
        symlinked out of the vault), not those of the last walk: ``rel_dir`` itself may be
        a symlinked folder made, moved or removed (the watcher reports one as a file)."""
        prefix = rel_dir.rstrip("/") + "/"
        old = self.engine.linked_dirs
        kept = {r: why for r, why in old.items() if r != rel_dir and not r.startswith(prefix)}
        led_out = linked_out(self.config.vault, rel_dir)
        self.engine.linked_dirs = {**kept, **linked, **({rel_dir: led_out} if led_out else {})}
        self._rewatch(old)

    def _stat_walk(self) -> dict[str, StatKey]:
        """Every note's ``stat_key``, through symlinks: an external target followed
        with ``follow_external_symlinks`` is watched by this walk only (ADR-0011)."""
        linked_dirs: dict[str, str] = {}
        # A note whose stat fails (a symlink loop) stays in, with a key no file has: a fresh
        # scan lists it and skips it, so the scans must read it too (and skip it likewise).
        out = disk_stats(
            self.config.vault, iter_notes(self.config.vault, self.engine.note_filter, linked_dirs)
        )
        old, self.engine.linked_dirs = self.engine.linked_dirs, linked_dirs
        self._rewatch(old)
        return out

    def _rewatch(self, old: dict[str, str]) -> None:
        """Have the watcher watch again the folders that could not be read in ``old`` (the
        last ``linked_dirs``) and can now: none of them was given a watch."""
        now = self.engine.linked_dirs
        again = [r for r, why in old.items() if why.startswith(UNREADABLE_DIR) and r not in now]
        if again:
            self.watcher.rearm(again)

    def _safety_rescan(self) -> None:  # then the writer saves the snapshot when idle
        started = time.perf_counter()
        now = self._stat_walk()
        old = self._stats
        known = set(self.engine.files) | set(self.engine.skipped)
        suspect = {p for p, key in now.items() if old.get(p) != key or p not in known}
        suspect |= known - set(now)
        stats = self._apply(sorted(suspect), external=True)
        self._log_skipped(stats.skipped)
        self._stats = now
        self._last_rescan = time.monotonic()
        if stats.changed or stats.removed:
            # Not missed yet: the watcher may report them still (``_report_missed``).
            self._unreported.update(dict.fromkeys(stats.changed, "changed"))
            self._unreported.update(dict.fromkeys(stats.removed, "removed"))
            self._unreported_until = time.monotonic() + MISSED_GRACE_S
        log.debug("safety rescan of %d files took %.3fs", len(now), time.perf_counter() - started)

    def _reported(self, changes: ChangeSet, paths: set[str]) -> None:
        """The watcher reported ``changes`` (``paths``: the files they name): none of the
        safety rescan's files among them was missed. A rescan (events lost) covers all: the
        watcher said so itself."""
        if not self._unreported:
            return
        if changes.rescan:
            self._unreported.clear()
            return
        below = tuple(d + "/" for d in changes.dirs if d)
        for rel in [r for r in self._unreported if r in paths or r.startswith(below)]:
            del self._unreported[rel]

    def _report_missed(self) -> None:
        """Once ``MISSED_GRACE_S`` has passed since the safety rescan changed files: warn of
        those the watcher has neither reported nor still holds (the writer thread calls it
        when the queue is empty, so no change set is waiting there)."""
        if not self._unreported or time.monotonic() < self._unreported_until:
            return
        held = self.watcher.holding(self._unreported)
        missed = {rel: how for rel, how in self._unreported.items() if rel not in held}
        self._unreported = {}
        if not missed:
            return
        named = sorted(missed)
        removed = sum(how == "removed" for how in missed.values())
        log.warning(
            "safety rescan repaired %d changed and %d removed files the watcher missed (%s)",
            len(missed) - removed,
            removed,
            ", ".join(map(repr, named[:5])) + (", …" if len(named) > 5 else ""),  # one line
        )
