"""The file watcher: watchdog events → debounced, coalesced change sets on a queue.

It owns the OS layer and nothing else: it never reads or parses a note. Each event becomes
vault-relative paths (a move gives both ends), a directory event becomes a directory to
re-list (the daemon expands it against the index), and anything inside a dot-folder (the
``.wikimem`` cache, ``.git``, ``.obsidian``) or not a note is dropped at once, so cache
writes and editor swap files never cause work, unless a symlink note leads there (``links``):
then it is that note that changed. Events are held until the vault has been
quiet for ``debounce_ms`` (or ``max_wait_ms`` has passed), then flushed as one
:class:`ChangeSet`. A lost-events signal from the OS, or more pending paths than
``max_pending``, turns the change set into a full rescan.

The observer is injectable (``observer_factory``) so tests can script events without the OS.
"""

from __future__ import annotations

import logging
import os
import queue
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from watchdog.events import (
    DirAttribEvent,
    DirCreatedEvent,
    DirDeletedEvent,
    DirModifiedEvent,
    DirMovedEvent,
    FileAttribEvent,
    FileClosedEvent,
    FileCreatedEvent,
    FileDeletedEvent,
    FileModifiedEvent,
    FileMovedEvent,
    FileSystemEvent,
    FileSystemEventHandler,
)

log = logging.getLogger(__name__)

WATCHED_EVENTS = (
    FileCreatedEvent,
    FileModifiedEvent,
    FileDeletedEvent,
    FileMovedEvent,
    FileClosedEvent,
    FileAttribEvent,
    DirCreatedEvent,
    DirDeletedEvent,
    DirMovedEvent,
    DirAttribEvent,  # a folder made (un)readable: its notes come and go, as a scan sees them
)
# Polling also re-lists a folder whose listing changed: a note the daemon read when it listed a
# new folder, made after the observer's look and gone before its next, is reported by nothing
# else (a folder a burst of notes came and went in kept them in the index).
POLLED_EVENTS = (*WATCHED_EVENTS, DirModifiedEvent)
_OVERFLOW_LOGGERS = ("watchdog.observers.inotify_c", "watchdog.observers.inotify")


@dataclass(frozen=True, slots=True)
class ChangeSet:
    """Paths to re-read, directories to re-list (both vault-relative), or a full rescan."""

    paths: frozenset[str] = frozenset()
    dirs: frozenset[str] = frozenset()
    rescan: bool = False

    def size(self) -> int:
        """How many changes it holds, as ``status.pending`` counts them (a rescan is one)."""
        return len(self.paths) + len(self.dirs) + int(self.rescan)


class ChangeQueue(queue.Queue[object]):
    """The daemon's queue of change sets (and its own jobs). Change sets waiting one behind
    the other are taken as one (a writer that fell behind reads each file once, not once per
    save). The change set taken last stays pending (``pending``) from the moment it leaves
    the queue, under the queue's own lock, until the taker calls ``done_with``: no moment
    finds it in neither place."""

    in_hand = 0

    def _get(self) -> object:  # called by ``get`` under ``mutex``
        item = super()._get()
        if not isinstance(item, ChangeSet):
            return item
        merged = [item]
        while self.queue and isinstance(self.queue[0], ChangeSet):
            merged.append(self.queue.popleft())
        if len(merged) > 1:
            item = ChangeSet(
                frozenset().union(*(c.paths for c in merged)),
                frozenset().union(*(c.dirs for c in merged)),
                any(c.rescan for c in merged),
            )
        self.in_hand = item.size()
        return item

    def done_with(self) -> None:
        with self.mutex:
            self.in_hand = 0

    def pending(self) -> int:
        with self.mutex:
            return self.in_hand + sum(c.size() for c in self.queue if isinstance(c, ChangeSet))


class Observer(Protocol):
    """The part of a watchdog observer the watcher uses (fakes implement just this)."""

    def schedule(
        self,
        event_handler: FileSystemEventHandler,
        path: str,
        *,
        recursive: bool = False,
        event_filter: list[type[FileSystemEvent]] | None = None,
    ) -> object: ...

    def start(self) -> None: ...

    def stop(self) -> None: ...

    def join(self, timeout: float | None = None) -> None: ...


ObserverFactory = Callable[[], Observer]


def native_observer() -> Observer:
    from watchdog.observers import Observer as NativeObserver

    observer: Observer = NativeObserver()
    return observer


def polling_observer() -> Observer:
    """The polling fallback. It looks at each path with ``lstat``: a symlinked folder is
    never descended, as the native observer and the scan never do (followed, one that loops
    back, ``ln -s . a``, walked without end and took unbounded memory)."""
    import os

    from watchdog.observers.polling import PollingObserverVFS

    observer: Observer = PollingObserverVFS(os.lstat, os.scandir, polling_interval=1.0)
    return observer


def _alive(observer: Observer) -> bool:
    """False when one of the observer's threads has ended: the observer itself, its
    emitters, or the inotify reader (``_inotify_fd``, watchdog's own: the thread that an
    error in watchdog ends). A fake observer has none of them, and is alive."""
    threads = [observer, *getattr(observer, "emitters", ()), getattr(observer, "_inotify_fd", None)]
    return all(t.is_alive() for t in threads if isinstance(t, threading.Thread))


@dataclass(slots=True)
class _Pending:
    paths: set[str] = field(default_factory=set)
    dirs: set[str] = field(default_factory=set)
    rescan: bool = False
    first_at: float = 0.0
    last_at: float = 0.0

    def empty(self) -> bool:
        return not (self.paths or self.dirs or self.rescan)


class _OverflowFilter(logging.Filter):
    """Spots watchdog's "queue overflowed" warning (it has no callback) and asks a rescan.

    A logger drops a record below its level before any filter sees it, so while the filter
    is attached its loggers let warnings through (``attach``) and the filter drops what the
    configured level would not have shown: ``--log-level ERROR`` must not lose the rescan."""

    def __init__(self, on_overflow: Callable[[], None]) -> None:
        super().__init__()
        self._on_overflow = on_overflow
        self._levels: dict[str, tuple[int, int]] = {}  # logger → (own level, shown from)

    def attach(self, names: Iterable[str]) -> None:
        for name in names:
            logger = logging.getLogger(name)
            self._levels[name] = (logger.level, logger.getEffectiveLevel())
            if logger.getEffectiveLevel() > logging.WARNING:
                logger.setLevel(logging.WARNING)
            logger.addFilter(self)

    def detach(self) -> None:
        for name, (level, _) in self._levels.items():
            logger = logging.getLogger(name)
            logger.removeFilter(self)
            logger.setLevel(level)
        self._levels.clear()

    def filter(self, record: logging.LogRecord) -> bool:
        if "overflow" in record.getMessage().lower():
            self._on_overflow()
        shown_from = self._levels.get(record.name, (0, logging.NOTSET))[1]
        return record.levelno >= shown_from


class Watcher(FileSystemEventHandler):
    """Watches ``root`` recursively and puts :class:`ChangeSet` objects on ``out``."""

    def __init__(
        self,
        root: Path,
        out: queue.Queue[ChangeSet],
        accepts: Callable[[str], bool],
        *,
        debounce_ms: int = 50,
        max_wait_ms: int = 1000,
        max_pending: int = 50_000,
        ignore_dirs: tuple[str, ...] = (),
        links: Callable[..., list[str]] | None = None,
        own_files: tuple[str, ...] = (),
        linked_dir: Callable[[str], bool] | None = None,
        force_polling: bool = False,
        observer_factory: ObserverFactory | None = None,
        polling_factory: ObserverFactory | None = None,
    ) -> None:
        super().__init__()
        self.root = Path(os.path.abspath(root))
        self.out = out
        self.accepts = accepts
        self.debounce_s = max(debounce_ms, 0) / 1000.0
        self.max_wait_s = max(max_wait_ms / 1000.0, self.debounce_s)
        self.max_pending = max_pending
        self.ignore_dirs = tuple(d.rstrip("/") for d in ignore_dirs if d)
        # ``links(rel, below=...)``: the symlink notes that read ``rel`` (or a path below the
        # folder ``rel``), which is no note itself: their target changed (``Engine.links_reading``).
        self.links = links or (lambda rel, below=False: [])
        self.own_files = frozenset(own_files)  # vault-relative: files the daemon writes (journal)
        # ``linked_dir(rel)``: ``rel`` is a symlinked folder ``status`` names (leading out).
        self.linked_dir = linked_dir or (lambda rel: False)
        self.force_polling = force_polling
        self.observer_factory = observer_factory or native_observer
        self.polling_factory = polling_factory or polling_observer
        self.kind = "none"
        self._observer: Observer | None = None
        self._relists_modified = False  # polling: a folder's listing changed → re-list it
        self._pending = _Pending()
        self._cond = threading.Condition()
        self._stopping = False
        self._thread: threading.Thread | None = None
        self._filter = _OverflowFilter(self.overflow)
        self._rearm: set[str] = set()  # folders to re-list once every folder is watched again

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> None:
        """Start the observer (native, else polling with a warning) and the flush thread."""
        self._observer, self.kind = self._start_observer()
        self._filter.attach(_OVERFLOW_LOGGERS)
        self._thread = threading.Thread(target=self._flush_loop, name="watch-debounce", daemon=True)
        self._thread.start()

    def _start_observer(self) -> tuple[Observer, str]:
        if not self.force_polling:
            try:
                return self._schedule(self.observer_factory(), polling=False), "native"
            except OSError as exc:  # e.g. the inotify watch limit is reached
                log.warning(
                    "native file watching unavailable (%s); polling every second instead", exc
                )
        return self._schedule(self.polling_factory(), polling=True), "polling"

    def _schedule(self, observer: Observer, *, polling: bool) -> Observer:
        self._relists_modified = polling
        events = POLLED_EVENTS if polling else WATCHED_EVENTS
        observer.schedule(self, str(self.root), recursive=True, event_filter=list(events))
        observer.start()
        return observer

    def rearm(self, dirs: Iterable[str]) -> None:
        """Ask for a new observer, then ``dirs`` (vault-relative) re-listed: a folder that
        could not be read when it was to be watched (``chmod 000``, at the start or when it
        came) got no watch, and once readable again its notes were listed but their edits
        never seen. The next ``revive`` does it (the daemon's main thread)."""
        with self._cond:
            self._rearm.update(dirs)

    def revive(self) -> bool:
        """Watch again with a new observer when a thread of the running one has died (then
        rescan for what it missed) or ``rearm`` asked it; True when it did. Watchdog's
        inotify reader ends on an error in its own bookkeeping (a folder moved out of the
        vault, a folder of that name made and deleted, then the moved one deleted outside:
        ``KeyError``), and from then on no change was seen until the safety rescan, while
        ``status`` still said native."""
        observer = self._observer
        with self._cond:
            rearm, self._rearm = self._rearm, set()
        if observer is None:
            return False
        dead = not _alive(observer)
        if not (dead or rearm):
            return False
        if dead:
            log.warning("the file watcher stopped working; watching again, a full rescan follows")
        try:  # the new one watches before the old one stops: no change in between unseen
            self._observer, self.kind = self._start_observer()
        except OSError as exc:  # said once: the safety rescan is all that is left
            log.error("cannot watch the vault again (%s); only the safety rescan sees changes", exc)
            self._observer, self.kind = None, "none"
            return False
        finally:  # on a thread of its own: watchdog joins its threads without a deadline
            threading.Thread(target=observer.stop, name="watch-stop", daemon=True).start()
        if dead:
            with self._cond:
                self._mark(rescan=True)
        else:
            self._add([], sorted(rearm))
        return True

    def stop(self) -> None:
        """Stop watching; pending changes are dropped (the next start rescans anyway)."""
        self._filter.detach()
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
        if self._observer is not None:
            self._observer.stop()
            self._observer.join(timeout=5)
        if self._thread is not None:
            self._thread.join(timeout=5)

    # --------------------------------------------------------------------- events

    def on_any_event(self, event: FileSystemEvent) -> None:
        paths, dirs = self._translate(event)
        if paths or dirs:
            self._add(paths, dirs)

    def overflow(self) -> None:
        """Events were lost (kernel queue overflow): the next flush is a full rescan."""
        log.warning("file events were lost; a full rescan follows")
        with self._cond:
            self._mark(rescan=True)

    def _translate(self, event: FileSystemEvent) -> tuple[list[str], list[str]]:
        if isinstance(event, DirModifiedEvent) and self._relists_modified:
            rel = self._rel(os.fsdecode(event.src_path))  # the vault's own: no rescan for it
            return [], [rel] if rel and self._visible_dir(rel) else []
        if not isinstance(event, WATCHED_EVENTS):
            return [], []  # opens and reads (our own too) and directory mtime changes
        ends = [event.src_path]
        if isinstance(event, FileMovedEvent | DirMovedEvent) and event.dest_path:
            ends.append(event.dest_path)
        rels = [r for r in (self._rel(os.fsdecode(p)) for p in ends) if r is not None]
        if isinstance(event, DirAttribEvent) and rels == [""]:
            return [], []  # the vault's own mode or mtime: not worth a full rescan
        if event.is_directory:
            dirs = [r for r in rels if self._visible_dir(r)]
            # A dot-folder moved or deleted: the symlink notes that read a file in it.
            hidden = [r for r in rels if r not in dirs]
            return [link for r in hidden for link in self._links(r, below=True)], dirs
        notes = [r for r in rels if self.accepts(r)]
        others = [r for r in rels if r not in notes]
        # A symlink to a folder is told as a file: made, moved or removed, it is a folder to
        # re-list (the walk does not enter it; ``status`` names one that leads out).
        dirs = [r for r in rels if self._visible_dir(r) and self._symlinked_dir(r)]
        # A file that is no note (``a.txt``, in a dot-folder) a symlink note leads to.
        return notes + [link for r in others for link in self._links(r)], dirs

    def _symlinked_dir(self, rel: str) -> bool:
        """``rel`` is a symlinked folder now (two ``stat``s), or was one ``status`` names."""
        path = os.path.join(self.root, *rel.split("/"))
        return (os.path.islink(path) and os.path.isdir(path)) or self.linked_dir(rel)

    def _links(self, rel: str, *, below: bool = False) -> list[str]:
        """``links``, never for the daemon's own files (the cache dir, the journal): a
        symlink note that reads one was read again for each write its own reading caused
        (a journal line), without end."""
        if rel in self.own_files or any(
            rel == d or rel.startswith(d + "/") for d in self.ignore_dirs
        ):
            return []
        return self.links(rel, below=below)

    def _rel(self, path: str) -> str | None:
        try:
            rel = Path(os.path.abspath(path)).relative_to(self.root).as_posix()
        except ValueError:
            return None
        return "" if rel == "." else rel

    def _visible_dir(self, rel: str) -> bool:
        if any(part.startswith(".") for part in rel.split("/")):
            return False
        return not any(rel == d or rel.startswith(d + "/") for d in self.ignore_dirs)

    def _add(self, paths: list[str], dirs: list[str]) -> None:
        with self._cond:
            p = self._pending
            if not p.rescan:
                p.paths.update(paths)
                p.dirs.update(dirs)
                if "" in p.dirs or len(p.paths) + len(p.dirs) > self.max_pending:
                    p.paths.clear()
                    p.dirs.clear()
                    p.rescan = True
            self._mark(rescan=False)

    def _mark(self, rescan: bool) -> None:
        now = time.monotonic()
        p = self._pending
        if p.first_at == 0.0:
            p.first_at = now
        p.last_at = now
        if rescan:
            p.paths.clear()
            p.dirs.clear()
            p.rescan = True
        self._cond.notify_all()

    def pending_count(self) -> int:
        """Changes seen but not yet handed to the daemon (a rescan counts as one)."""
        with self._cond:
            p = self._pending
            return len(p.paths) + len(p.dirs) + int(p.rescan)

    def holding(self, rels: Iterable[str]) -> set[str]:
        """Those of the vault-relative ``rels`` with a change seen but not handed over yet:
        named, below a directory to re-list, or anywhere when a rescan is pending."""
        with self._cond:
            p = self._pending
            if p.rescan:
                return set(rels)
            below = tuple(d + "/" for d in p.dirs)
            return {r for r in rels if r in p.paths or r.startswith(below)}

    # ---------------------------------------------------------------------- flush

    def _flush_loop(self) -> None:
        with self._cond:
            while not self._stopping:
                p = self._pending
                if p.empty():
                    self._cond.wait()
                    continue
                now = time.monotonic()
                due = min(p.last_at + self.debounce_s, p.first_at + self.max_wait_s)
                if now < due:
                    self._cond.wait(due - now)
                    continue
                self.out.put(ChangeSet(frozenset(p.paths), frozenset(p.dirs), p.rescan))
                self._pending = _Pending()

    def flush_now(self) -> None:
        """Hand over whatever is pending immediately (tests and shutdown)."""
        with self._cond:
            p = self._pending
            if not p.empty():
                self.out.put(ChangeSet(frozenset(p.paths), frozenset(p.dirs), p.rescan))
                self._pending = _Pending()
