"""The daemon's view of the vault on disk: the start (from the index snapshot, or cold), the
watcher's change sets, and the safety rescan that repairs what the OS did not report.

A mixin of :class:`~wikimem_watch.daemon.service.Daemon`, which owns the state; every method
runs on its writer thread. The safety rescan is cheap: it walks the vault and ``stat``s each
note (no reads), and re-applies only paths whose (mtime, size, inode) changed since the last
walk or whose presence differs from the index.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Iterable

from ..config import Config
from ..core.engine import ApplyStats, Engine
from ..core.snapshot import no_gc, restore_engine, save_snapshot
from ..core.vault import iter_notes, notes_below
from .watcher import ChangeSet

__all__ = ["StatKey", "VaultScans"]

log = logging.getLogger(__name__)

StatKey = tuple[int, int, int]


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
    scan_files: int | None

    def _apply(self, paths: Iterable[str], *, external: bool = False) -> ApplyStats:
        """Apply ``paths`` in chunks (``Daemon._apply``, which the daemon defines)."""
        raise NotImplementedError

    def _initial_scan(self) -> None:
        """Start from the index snapshot when there is a usable one and re-read only the
        files whose stat changed since (ADR-0015); else scan cold. The writer saves a new
        snapshot once the daemon is ready."""
        path = self.config.snapshot_path
        if path is None or self.cache_problem is not None:
            self._scan_chunked()
            return
        stats = self._stat_walk()
        on_disk = {rel: key[:2] for rel, key in stats.items()}
        stale = restore_engine(self.engine, path, on_disk)
        self.snapshot.update(loaded=stale is not None, reread=None if stale is None else len(stale))
        if stale is not None and not self.engine.vector_keys_missing:
            self._saved = (self.engine.generation, self.engine.stat_refreshes)
        todo = list(stats) if stale is None else stale
        self.scan_files = len(todo)
        with no_gc():  # millions of objects and no cycles: ~10% of a cold scan
            self._apply(todo)
        self._stats = stats
        self._last_rescan = time.monotonic()

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

    def _scan_chunked(self) -> ApplyStats:
        """``engine.scan()`` in chunks, refreshing the safety-rescan stat snapshot."""
        stats = self._stat_walk()
        known = set(self.engine.files) | set(self.engine.skipped)
        todo = [*stats, *sorted(known - set(stats))]
        self.scan_files = len(todo)
        result = self._apply(todo)
        self._stats = stats
        self._last_rescan = time.monotonic()
        return result

    def _apply_changes(self, changes: ChangeSet) -> None:
        if changes.rescan:
            log.info("full rescan (events were lost or too many at once)")
            self._scan_chunked()
            return
        paths = set(changes.paths)
        for rel in changes.dirs:
            paths.update(self._under(rel))
        stats = self._apply(sorted(paths), external=True)
        if stats.changed or stats.removed:
            log.debug("applied %d changed, %d removed", len(stats.changed), len(stats.removed))

    def _under(self, rel_dir: str) -> list[str]:
        """Indexed paths below a moved/deleted/created directory, plus the notes now there."""
        prefix = rel_dir.rstrip("/") + "/"
        with self.engine.lock:
            out = [p for p in (*self.engine.files, *self.engine.skipped) if p.startswith(prefix)]
        out.extend(notes_below(self.config.vault, rel_dir, self.engine.note_filter))
        return out

    def _stat_walk(self) -> dict[str, StatKey]:
        """Every note's (mtime, size, inode), through symlinks: an external target followed
        with ``follow_external_symlinks`` is watched by this walk only (ADR-0011)."""
        out: dict[str, StatKey] = {}
        linked_dirs: dict[str, str] = {}
        top = os.path.join(self.config.vault, "")  # a string join per note, not a Path
        for rel in iter_notes(self.config.vault, self.engine.note_filter, linked_dirs):
            try:
                st = os.stat(top + (rel if os.sep == "/" else rel.replace("/", os.sep)))
            except OSError:
                continue
            out[rel] = (st.st_mtime_ns, st.st_size, st.st_ino)
        self.engine.linked_dirs = linked_dirs
        return out

    def _safety_rescan(self) -> None:  # then the writer saves the snapshot when idle
        started = time.perf_counter()
        now = self._stat_walk()
        old = self._stats
        known = set(self.engine.files) | set(self.engine.skipped)
        suspect = {p for p, key in now.items() if old.get(p) != key or p not in known}
        suspect |= known - set(now)
        stats = self._apply(sorted(suspect), external=True)
        self._stats = now
        self._last_rescan = time.monotonic()
        if stats.changed or stats.removed:
            log.warning(
                "safety rescan repaired %d changed and %d removed files the watcher missed",
                len(stats.changed),
                len(stats.removed),
            )
        log.debug("safety rescan of %d files took %.3fs", len(now), time.perf_counter() - started)
