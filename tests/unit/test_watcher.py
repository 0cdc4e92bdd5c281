"""The watcher turns scripted watchdog events into change sets; the OS layer is faked."""

from __future__ import annotations

import logging
import queue
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from watchdog.events import (
    DirAttribEvent,
    DirCreatedEvent,
    DirDeletedEvent,
    DirModifiedEvent,
    DirMovedEvent,
    FileClosedEvent,
    FileCreatedEvent,
    FileDeletedEvent,
    FileModifiedEvent,
    FileMovedEvent,
    FileOpenedEvent,
)

from tests.conftest import FakeObserver
from wikimem_watch.core.vault import NoteFilter
from wikimem_watch.daemon.watcher import ChangeQueue, ChangeSet, Watcher


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path


def make(
    root: Path, debounce_ms: int = 60_000, max_pending: int = 50_000, **options: Any
) -> tuple[Watcher, FakeObserver, queue.Queue[ChangeSet]]:
    """A started watcher on a scripted observer; ``options`` are more of ``Watcher``'s."""
    fake = FakeObserver()
    out: queue.Queue[ChangeSet] = queue.Queue()
    watcher = Watcher(
        root,
        out,
        NoteFilter().accepts,
        debounce_ms=debounce_ms,
        max_wait_ms=max(debounce_ms, 1),
        max_pending=max_pending,
        observer_factory=lambda: fake,
        **options,
    )
    watcher.start()
    return watcher, fake, out


def flushed(watcher: Watcher, out: queue.Queue[ChangeSet]) -> ChangeSet:
    watcher.flush_now()
    return out.get(timeout=5)


def test_many_events_on_one_note_coalesce_into_one_change(root: Path) -> None:
    watcher, fake, out = make(root)
    try:
        note = str(root / "diary" / "2026-07-21.md")
        fake.emit(FileCreatedEvent(note))
        for _ in range(100):
            fake.emit(FileModifiedEvent(note))
        fake.emit(FileClosedEvent(note))
        assert watcher.pending_count() == 1
        change = flushed(watcher, out)
        assert change == ChangeSet(paths=frozenset({"diary/2026-07-21.md"}))
        assert out.empty()
        assert watcher.pending_count() == 0
    finally:
        watcher.stop()


def test_quiet_period_flushes_without_help(root: Path) -> None:
    watcher, fake, out = make(root, debounce_ms=5)
    try:
        fake.emit(FileModifiedEvent(str(root / "a.md")))
        assert out.get(timeout=5).paths == {"a.md"}
    finally:
        watcher.stop()


def test_file_move_yields_both_ends(root: Path) -> None:
    watcher, fake, out = make(root)
    try:
        fake.emit(FileMovedEvent(str(root / "wiki/old.md"), str(root / "wiki/new.md")))
        assert flushed(watcher, out).paths == {"wiki/old.md", "wiki/new.md"}
    finally:
        watcher.stop()


def test_atomic_save_temp_then_rename_keeps_only_the_note(root: Path) -> None:
    watcher, fake, out = make(root)
    try:
        tmp, note = str(root / ".note.md.tmp123"), str(root / "note.md")
        fake.emit(FileCreatedEvent(tmp))
        fake.emit(FileModifiedEvent(tmp))
        fake.emit(FileMovedEvent(tmp, note))
        assert flushed(watcher, out).paths == {"note.md"}
    finally:
        watcher.stop()


@pytest.mark.parametrize(
    "name",
    [".note.md.swp", "note.md~", "4913", "#note.md#", "~$note.md", ".wikimem/x.md", ".git/a.md"],
)
def test_swap_backup_cache_and_dot_folder_files_cause_no_work(root: Path, name: str) -> None:
    watcher, fake, out = make(root)
    try:
        fake.emit(FileCreatedEvent(str(root / name)))
        fake.emit(FileModifiedEvent(str(root / name)))
        assert watcher.pending_count() == 0
        watcher.flush_now()
        assert out.empty()
    finally:
        watcher.stop()


def test_reads_and_directory_modifications_are_ignored(root: Path) -> None:
    watcher, fake, out = make(root)
    try:
        fake.emit(FileOpenedEvent(str(root / "a.md")))
        fake.emit(DirModifiedEvent(str(root / "wiki")))
        assert watcher.pending_count() == 0
    finally:
        watcher.stop()


def test_directory_move_and_delete_are_directories_to_relist(root: Path) -> None:
    watcher, fake, out = make(root)
    try:
        fake.emit(DirMovedEvent(str(root / "notes/2025"), str(root / "archive/2025")))
        fake.emit(DirDeletedEvent(str(root / "scratch")))
        fake.emit(DirCreatedEvent(str(root / "fresh")))
        fake.emit(DirCreatedEvent(str(root / ".git/objects")))
        change = flushed(watcher, out)
        assert change.dirs == {"notes/2025", "archive/2025", "scratch", "fresh"}
        assert not change.paths and not change.rescan
    finally:
        watcher.stop()


def test_a_folder_chmod_is_a_directory_to_relist_but_the_vault_root_s_is_not(
    root: Path,
) -> None:
    # ``chmod 000 wiki`` hides its notes from a scan, ``chmod 755`` shows them again; a touch
    # of the vault folder itself is not worth a full rescan.
    watcher, fake, out = make(root)
    try:
        fake.emit(DirAttribEvent(str(root / "wiki")))
        fake.emit(DirAttribEvent(str(root)))
        fake.emit(DirAttribEvent(str(root / ".obsidian")))
        change = flushed(watcher, out)
        assert change.dirs == {"wiki"} and not change.paths and not change.rescan
    finally:
        watcher.stop()


def test_directory_moved_into_a_dot_folder_relists_only_the_source(root: Path) -> None:
    watcher, fake, out = make(root)
    try:
        fake.emit(DirMovedEvent(str(root / "wiki"), str(root / ".trash/wiki")))
        assert flushed(watcher, out).dirs == {"wiki"}
    finally:
        watcher.stop()


def test_a_file_no_note_that_a_symlink_note_reads_is_a_change_of_that_note(root: Path) -> None:
    # ``wiki/a.md -> ../.hidden/a.txt``, ``b.md -> wiki/b.txt``: the targets are dropped
    # as files, but the symlink notes reading them changed.
    reading = {
        ".hidden/a.txt": ["wiki/a.md"],
        "wiki/b.txt": ["b.md"],
        "journal.jsonl": ["log.md"],  # the daemon's own files: never (each read writes them)
        ".wikimem/embedder.json": ["cache.md"],
    }

    def links(rel: str, below: bool = False) -> list[str]:
        if below:
            return [n for t, ns in reading.items() if t.startswith(rel + "/") for n in ns]
        return reading.get(rel, [])

    watcher, fake, out = make(
        root, ignore_dirs=(".wikimem",), links=links, own_files=("journal.jsonl",)
    )
    try:
        fake.emit(FileModifiedEvent(str(root / "journal.jsonl")))
        fake.emit(FileModifiedEvent(str(root / ".wikimem/embedder.json")))
        fake.emit(DirCreatedEvent(str(root / ".wikimem")))
        assert watcher.pending_count() == 0
        fake.emit(FileModifiedEvent(str(root / ".hidden/a.txt")))
        fake.emit(FileModifiedEvent(str(root / "wiki/b.txt")))
        fake.emit(FileModifiedEvent(str(root / "wiki/c.txt")))  # nothing reads it
        assert flushed(watcher, out) == ChangeSet(paths=frozenset({"wiki/a.md", "b.md"}))
        fake.emit(DirDeletedEvent(str(root / ".hidden")))
        fake.emit(DirCreatedEvent(str(root / ".git/objects")))
        assert flushed(watcher, out) == ChangeSet(paths=frozenset({"wiki/a.md"}))
    finally:
        watcher.stop()


def test_a_symlink_to_a_folder_told_as_a_file_is_a_folder_to_relist(root: Path) -> None:
    # Made or moved: a symlink now. Removed: one ``status`` names (``linked_dir``).
    (root / "outside").mkdir()
    (root / "wiki").mkdir()
    (root / "wiki/ext").symlink_to(root / "outside", target_is_directory=True)
    watcher, fake, out = make(root, linked_dir=lambda rel: rel == "old")
    try:
        fake.emit(FileCreatedEvent(str(root / "wiki/ext")))
        fake.emit(FileDeletedEvent(str(root / "old")))
        fake.emit(FileCreatedEvent(str(root / "wiki/picture.png")))  # no symlink: dropped
        fake.emit(FileDeletedEvent(str(root / "gone.pdf")))
        assert flushed(watcher, out) == ChangeSet(dirs=frozenset({"wiki/ext", "old"}))
    finally:
        watcher.stop()


def test_events_outside_the_vault_are_dropped(root: Path) -> None:
    watcher, fake, out = make(root / "vault")
    try:
        fake.emit(FileMovedEvent(str(root / "elsewhere.md"), str(root / "vault/in.md")))
        fake.emit(FileDeletedEvent(str(root / "other/x.md")))
        assert flushed(watcher, out).paths == {"in.md"}
    finally:
        watcher.stop()


def test_overflow_turns_the_change_into_a_full_rescan(root: Path) -> None:
    watcher, fake, out = make(root)
    try:
        fake.emit(FileModifiedEvent(str(root / "a.md")))
        watcher.overflow()
        fake.emit(FileModifiedEvent(str(root / "b.md")))
        assert flushed(watcher, out) == ChangeSet(rescan=True)
        fake.emit(FileModifiedEvent(str(root / "c.md")))
        assert flushed(watcher, out).paths == {"c.md"}  # back to normal afterwards
    finally:
        watcher.stop()


def test_watchdog_overflow_warning_requests_a_rescan(root: Path) -> None:
    watcher, fake, out = make(root)
    try:
        logging.getLogger("watchdog.observers.inotify_c").warning(
            "Inotify queue overflowed; filesystem events were lost"
        )
        assert flushed(watcher, out).rescan
    finally:
        watcher.stop()


def test_the_overflow_warning_requests_a_rescan_at_any_log_level(root: Path) -> None:
    logger = logging.getLogger("watchdog.observers.inotify_c")
    root_logger = logging.getLogger()
    was = root_logger.level
    root_logger.setLevel(logging.ERROR)  # serve --log-level ERROR
    shown: list[logging.LogRecord] = []
    handler = logging.Handler()
    handler.emit = shown.append  # type: ignore[method-assign]
    logger.addHandler(handler)
    try:
        watcher, fake, out = make(root)
        try:
            logger.warning("Inotify queue overflowed; filesystem events were lost")
            assert flushed(watcher, out).rescan
            assert shown == []  # still not printed: the level said errors only
        finally:
            watcher.stop()
        assert logger.level == logging.NOTSET and not logger.filters  # left as found
    finally:
        logger.removeHandler(handler)
        root_logger.setLevel(was)


def test_more_pending_paths_than_the_cap_become_a_rescan(root: Path) -> None:
    watcher, fake, out = make(root, max_pending=10)
    try:
        for i in range(11):
            fake.emit(FileCreatedEvent(str(root / f"n{i}.md")))
        assert flushed(watcher, out) == ChangeSet(rescan=True)
    finally:
        watcher.stop()


def test_an_event_on_the_vault_root_directory_is_a_rescan(root: Path) -> None:
    watcher, fake, out = make(root)
    try:
        fake.emit(DirCreatedEvent(str(root)))
        assert flushed(watcher, out).rescan
    finally:
        watcher.stop()


def test_native_observer_failure_falls_back_to_polling(root: Path) -> None:
    polling = FakeObserver()

    def broken() -> FakeObserver:
        raise OSError(28, "inotify watch limit reached")

    out: queue.Queue[ChangeSet] = queue.Queue()
    watcher = Watcher(
        root, out, NoteFilter().accepts, observer_factory=broken, polling_factory=lambda: polling
    )
    watcher.start()
    try:
        assert watcher.kind == "polling" and polling.started
    finally:
        watcher.stop()
    assert polling.stopped


def test_force_polling_skips_the_native_observer(root: Path) -> None:
    native, polling = FakeObserver(), FakeObserver()
    out: queue.Queue[ChangeSet] = queue.Queue()
    watcher = Watcher(
        root,
        out,
        NoteFilter().accepts,
        force_polling=True,
        observer_factory=lambda: native,
        polling_factory=lambda: polling,
    )
    watcher.start()
    watcher.stop()
    assert watcher.kind == "polling" and not native.started and polling.started


def test_an_observer_whose_reader_thread_died_is_replaced_and_a_rescan_follows(
    root: Path,
) -> None:
    """Watchdog's inotify reader can end on an error of its own while the observer thread
    lives on: ``revive`` starts a new observer and asks a rescan for what was missed."""
    dead = threading.Thread(target=lambda: None)
    dead.start()
    dead.join()
    first, second = FakeObserver(), FakeObserver()
    first._inotify_fd = dead  # type: ignore[attr-defined]
    observers = iter([first, second])
    out: queue.Queue[ChangeSet] = queue.Queue()
    watcher = Watcher(root, out, NoteFilter().accepts, observer_factory=lambda: next(observers))
    watcher.start()
    try:
        assert watcher.revive() is True
        assert second.started and watcher.kind == "native"
        assert flushed(watcher, out).rescan
        assert watcher.revive() is False  # the new one is alive
        deadline = time.monotonic() + 5
        while not first.stopped and time.monotonic() < deadline:
            time.sleep(0.01)  # stopped on a thread of its own
        assert first.stopped
    finally:
        watcher.stop()


def test_a_rearm_starts_a_new_observer_before_the_old_stops_and_relists_the_folders(
    root: Path,
) -> None:
    # A folder readable again had no watch: every folder is watched anew, then it is
    # re-listed (no full rescan: the old observer watched until the new one did).
    first, second = FakeObserver(), FakeObserver()
    observers = iter([first, second])
    out: queue.Queue[ChangeSet] = queue.Queue()
    watcher = Watcher(root, out, NoteFilter().accepts, observer_factory=lambda: next(observers))
    watcher.start()
    try:
        assert watcher.revive() is False  # alive, and nothing asked
        watcher.rearm(["wiki"])
        assert watcher.revive() is True and second.started
        assert flushed(watcher, out) == ChangeSet(dirs=frozenset({"wiki"}))
        assert watcher.revive() is False
        deadline = time.monotonic() + 5
        while not first.stopped and time.monotonic() < deadline:
            time.sleep(0.01)  # stopped on a thread of its own
        assert first.stopped
    finally:
        watcher.stop()


def test_change_sets_waiting_one_behind_the_other_are_taken_as_one() -> None:
    changes = ChangeQueue()
    changes.put(ChangeSet(frozenset({"a.md"})))
    changes.put(ChangeSet(frozenset({"a.md", "b.md"}), frozenset({"d"})))
    changes.put("a job")  # not merged across: what came after it stays after it
    changes.put(ChangeSet(frozenset({"c.md"})))
    changes.put(ChangeSet(rescan=True))
    assert changes.get() == ChangeSet(frozenset({"a.md", "b.md"}), frozenset({"d"}))
    assert changes.pending() == 3 + 1 + 1  # in hand, and the two behind the job
    changes.done_with()
    assert changes.get() == "a job"
    assert changes.get() == ChangeSet(frozenset({"c.md"}), rescan=True)
    changes.done_with()
    assert changes.pending() == 0 and changes.empty()


def test_a_change_set_taken_from_the_queue_stays_pending_until_done() -> None:
    changes = ChangeQueue()
    changes.put(ChangeSet(frozenset({"a.md", "b.md"}), frozenset({"d"})))
    changes.put("a job")  # jobs share the queue and are no pending change
    changes.put(ChangeSet(rescan=True))
    assert changes.pending() == 4
    assert changes.get().size() == 3  # type: ignore[attr-defined]
    assert changes.pending() == 4  # in hand: not applied yet
    changes.done_with()
    assert changes.pending() == 1
    assert changes.get() == "a job"
    assert changes.pending() == 1  # a job in hand leaves the count alone
    changes.get()
    changes.done_with()
    assert changes.pending() == 0


def test_the_polling_observer_never_descends_a_symlinked_folder(tmp_path: Path) -> None:
    """A folder symlink that loops back (``ln -s . a``) was walked without end."""
    from watchdog.utils.dirsnapshot import DirectorySnapshot

    from wikimem_watch.daemon.watcher import polling_observer

    (tmp_path / "a").symlink_to(".", target_is_directory=True)
    (tmp_path / "note.md").write_text("## n\nx\n", encoding="utf-8")
    emitter = polling_observer()._emitter_class  # type: ignore[attr-defined]  # a partial
    snapshot = DirectorySnapshot(str(tmp_path), stat=emitter.keywords["stat"])
    paths = set(snapshot.paths)
    assert str(tmp_path / "note.md") in paths and str(tmp_path / "a" / "note.md") not in paths
