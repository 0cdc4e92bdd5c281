"""The real daemon against hostile vault files: FIFOs, symlinks out of the vault, a symlinked
cache dir, and a stop that a stuck writer cannot block (ADR-0011)."""

from __future__ import annotations

import contextlib
import functools
import json
import os
import stat
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from daemon_harness import DaemonProc, eventually, short_socket_path, wikimem

from tests.conftest import held
from wikimem_watch.config import load_config
from wikimem_watch.core import snapshot as snapshot_module
from wikimem_watch.core.engine import ApplyStats
from wikimem_watch.daemon import service
from wikimem_watch.daemon.service import Daemon
from wikimem_watch.daemon.watcher import ChangeSet

pytestmark = pytest.mark.timeout(60)


@contextlib.contextmanager
def running(daemon: Daemon, *released: threading.Event) -> Iterator[None]:
    """``daemon.run()`` on a thread for the block; then stopped and joined (``released`` set
    first), also when an assertion in the block failed: no thread is left behind."""
    runner = threading.Thread(target=daemon.run)
    runner.start()
    try:
        yield
    finally:
        daemon.request_stop()
        for event in released:
            event.set()
        runner.join(10)


def hit_paths(daemon: DaemonProc, q: str) -> set[str]:
    hits = daemon.result("query", {"q": q, "k": 50, "parse_time": False})["hits"]
    return {h["path"] for h in hits}


def skipped(daemon: DaemonProc) -> dict[str, str]:
    return {s["path"]: s["reason"] for s in daemon.result("status")["skipped"]}


def test_a_fifo_in_the_vault_is_skipped_and_sigterm_still_stops_the_daemon(
    vault: Path, start_daemon: Callable[..., DaemonProc]
) -> None:
    os.mkfifo(vault / "wiki" / "x.md")
    daemon = start_daemon(vault)  # ready: the initial scan did not block on the pipe
    assert skipped(daemon) == {"wiki/x.md": "not a regular file (named pipe)"}
    assert hit_paths(daemon, "sailing") == {"wiki/people.md"}
    os.mkfifo(vault / "diary" / "2026-07-21.md")  # one created while running
    eventually(lambda: "diary/2026-07-21.md" in skipped(daemon), "new FIFO reported")
    (vault / "wiki" / "boats.md").write_text("## Dinghy\nzephyrine\n", encoding="utf-8")
    eventually(lambda: hit_paths(daemon, "zephyrine") == {"wiki/boats.md"}, "still applying")
    daemon.proc.terminate()
    assert daemon.proc.wait(10) == 0
    assert not daemon.sock.exists()


def test_a_symlink_out_of_the_vault_is_neither_indexed_nor_served(
    vault: Path, tmp_path: Path, start_daemon: Callable[..., DaemonProc]
) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("## root\nhunter2 password\n", encoding="utf-8")
    (vault / "passwd.md").symlink_to(secret)
    daemon = start_daemon(vault)
    assert hit_paths(daemon, "hunter2") == set()
    assert "outside the vault" in skipped(daemon)["passwd.md"]
    rpc = daemon.rpc()
    try:
        assert rpc.call("note", {"path": "passwd.md"})["error"]["code"] == -32004
    finally:
        rpc.close()
    (vault / "wiki" / "leak.md").symlink_to(secret)  # one made while running
    eventually(lambda: "wiki/leak.md" in skipped(daemon), "new outside symlink reported")
    assert hit_paths(daemon, "hunter2") == set()


def test_following_external_symlinks_serves_them_when_the_user_asks(
    vault: Path, tmp_path: Path, start_daemon: Callable[..., DaemonProc]
) -> None:
    secret = tmp_path / "shared.txt"
    secret.write_text("## shared\nquillwort notes\n", encoding="utf-8")
    (vault / "shared.md").symlink_to(secret)
    daemon = start_daemon(vault, "--follow-external-symlinks")
    assert hit_paths(daemon, "quillwort") == {"shared.md"}
    assert skipped(daemon) == {}


def test_a_cache_dir_symlinked_out_of_the_vault_is_not_touched(
    vault: Path, tmp_path: Path, start_daemon: Callable[..., DaemonProc]
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o755)
    os.chmod(elsewhere, 0o755)
    (vault / ".wikimem").symlink_to(elsewhere, target_is_directory=True)
    daemon = start_daemon(vault)
    status = daemon.result("status")
    assert status["cache"]["usable"] is False and "outside the vault" in status["cache"]["problem"]
    assert hit_paths(daemon, "sailing") == {"wiki/people.md"}  # serves without caches
    assert list(elsewhere.iterdir()) == []
    assert stat.S_IMODE(elsewhere.stat().st_mode) == 0o755


def test_a_stop_does_not_wait_for_a_stuck_writer(
    vault: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    daemon = Daemon(load_config(vault), socket_path=short_socket_path(), force_polling=True)
    stuck, release = threading.Event(), threading.Event()

    def apply_forever(paths: object, stop: object = None) -> ApplyStats:
        stuck.set()
        release.wait(30)  # e.g. a read that never returns
        return ApplyStats()

    monkeypatch.setattr(daemon.engine, "apply", apply_forever)
    runner = threading.Thread(target=daemon.run)
    runner.start()
    try:
        assert stuck.wait(10)
        daemon.request_stop()
        runner.join(15)
        assert not runner.is_alive(), "run() did not return while the writer was stuck"
        assert not daemon.socket_path.exists()
    finally:
        daemon.request_stop()  # also when an assertion failed first: no thread left behind
        release.set()
        runner.join(5)


def test_status_during_the_first_scan_says_how_many_files_it_reads(
    vault: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    config = load_config(vault, {"snapshot_dir": str(tmp_path / "snap")})
    daemon = Daemon(config, socket_path=short_socket_path(), force_polling=True)
    reading, release = held(monkeypatch, daemon.engine, "apply")
    with running(daemon, release):
        assert reading.wait(10)
        during = daemon.status()
        assert during["state"] == "scanning"
        assert during["scan_files"] == len(list(vault.rglob("*.md"))) > 0
        release.set()
        eventually(lambda: daemon.status()["state"] == "ready", "ready after the scan")
        assert daemon.status()["scan_files"] is None


def test_a_write_during_the_first_scan_waits_for_one_batch_not_the_whole_scan(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first scan is one bulk apply that holds ``apply_lock``; a write waiting for it
    ends that apply after its batch in hand, and the rest of the scan goes in chunks. The
    index then equals a fresh scan, the write included."""
    from wikimem_watch.core import engine as engine_module
    from wikimem_watch.core.engine import Engine
    from wikimem_watch.core.prepare import FilePreparer

    vault = tmp_path / "vault"
    (vault / "diary").mkdir(parents=True)
    for month in range(1, 5):
        for day in range(1, 29):
            entries = "".join(f"## {h:02d}:00\nwalked {day} km at {h}\n\n" for h in range(8, 18))
            (vault / "diary" / f"2026-{month:02d}-{day:02d}.md").write_text(entries)
    monkeypatch.setattr(engine_module, "_BULK_ENTRIES", 40)  # a batch: four files
    prepare = FilePreparer.__call__
    prepared = threading.Event()

    def slow(self: FilePreparer, rel: str, *args: object, **kw: object) -> object:
        prepared.set()
        time.sleep(0.02)  # the whole scan would take 2.2 s
        return prepare(self, rel, *args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(FilePreparer, "__call__", slow)
    config = load_config(vault, {"snapshot_dir": str(tmp_path / "snap")})
    daemon = Daemon(config, socket_path=short_socket_path(), force_polling=True)
    with running(daemon):
        assert prepared.wait(10)
        daemon.writer.append_diary("a quince tart", date="2026-05-01", time="09:30")
        assert daemon.state == "scanning", "the write waited for the whole scan"
        assert daemon.engine.files.get("diary/2026-05-01.md") is not None
        eventually(lambda: daemon.state == "ready", "ready after the scan")
        monkeypatch.setattr(FilePreparer, "__call__", prepare)
        fresh = Engine(load_config(vault, {"snapshot": False}))
        fresh.scan()
        assert daemon.engine.digest() == fresh.digest()
        assert len(daemon.engine.entries) == len(fresh.entries) == 1121


def test_a_stop_waits_for_a_snapshot_being_written(
    vault: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    config = load_config(vault, {"snapshot_dir": str(tmp_path / "snap")})
    daemon = Daemon(config, socket_path=short_socket_path(), force_polling=True)
    writing = threading.Event()
    real_write = snapshot_module.write_snapshot

    def slow_write(engine: object, path: Path) -> int:
        writing.set()
        time.sleep(service.WRITER_JOIN_S + 1.0)  # longer than a stop waits for a file
        return real_write(engine, path)  # type: ignore[arg-type]

    monkeypatch.setattr(snapshot_module, "write_snapshot", slow_write)
    _stop_when_ready_and_find_the_snapshot(daemon, lambda: None)  # saved on the way out
    assert writing.is_set()


def _stop_when_ready_and_find_the_snapshot(daemon: Daemon, before_stop: Callable[[], None]) -> None:
    """Run ``daemon`` on a thread until ready, call ``before_stop``, stop it, and assert that
    it stopped and left its index snapshot."""
    runner = threading.Thread(target=daemon.run)
    runner.start()
    try:
        deadline = time.monotonic() + 10
        while daemon.state != "ready":
            assert time.monotonic() < deadline
            time.sleep(0.02)
        before_stop()
        daemon.request_stop()
        runner.join(service.WRITER_JOIN_S + service.SNAPSHOT_JOIN_S)
        assert not runner.is_alive()
        path = daemon.config.snapshot_path
        assert path is not None and path.is_file()
    finally:
        runner.join(5)


def test_a_stop_while_a_change_is_applied_still_saves_the_snapshot(
    vault: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(service, "SNAPSHOT_IDLE_S", 600.0)  # no save while idle: only the stop's
    config = load_config(vault, {"snapshot_dir": str(tmp_path / "snap")})
    daemon = Daemon(config, socket_path=short_socket_path(), force_polling=True)
    applying = threading.Event()

    def apply_until_stopped(changes: object) -> None:
        applying.set()
        while not daemon._stop_requested:  # the stop arrives in the middle of this change
            time.sleep(0.01)

    def change_in_hand() -> None:
        daemon._changes.put(ChangeSet(paths=frozenset({"diary/2026-07-20.md"})))
        assert applying.wait(10)

    monkeypatch.setattr(daemon, "_apply_changes", apply_until_stopped)
    _stop_when_ready_and_find_the_snapshot(daemon, change_in_hand)


def test_check_against_a_daemon_still_scanning_compares_nothing_and_says_so(
    vault: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """``check --wait 0`` during the first scan said "daemon index differs from a fresh
    scan" and listed every note as missing (exit 1): the index was only unfinished."""
    config = load_config(vault, {"snapshot_dir": str(tmp_path / "snap")})
    daemon = Daemon(config, socket_path=short_socket_path(), force_polling=True)
    reading, release = held(monkeypatch, daemon.engine, "apply")
    with running(daemon, release):
        assert reading.wait(10)
        args = ("check", "--vault", str(vault), "--socket", str(daemon.socket_path))
        out = wikimem(*args, "--wait", "0")
        assert out.returncode == 2, out.stdout
        assert "missing in daemon" not in out.stdout
        assert "still reading the vault (status: scanning) after --wait 0s" in out.stderr
        release.set()
        eventually(lambda: daemon.status()["state"] == "ready", "ready after the scan")
        assert wikimem(*args).returncode == 0


def test_a_note_skipped_while_running_is_logged_once_like_a_parse_warning(
    vault: Path, start_daemon: Callable[..., DaemonProc]
) -> None:
    """A note made binary (or a FIFO) after the start was dropped from the index without a
    line in the daemon's log, while a bad-UTF-8 edit is logged."""
    daemon = start_daemon(vault)
    (vault / "wiki" / "people.md").write_bytes(b"Ann\x00")
    os.mkfifo(vault / "wiki" / "pipe.md")
    eventually(lambda: len(skipped(daemon)) == 2, "both skipped")
    line = "WARNING skipped wiki/people.md: binary file (NUL bytes)"
    eventually(lambda: line in daemon.output(), "the binary note logged")
    assert "WARNING skipped wiki/pipe.md: not a regular file (named pipe)" in daemon.output()
    assert daemon.output().count(line) == 1


def test_a_dry_run_during_the_first_scan_is_refused_not_a_list_of_every_file(
    vault: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """``reindex --dry-run`` during the first scan listed every file not read yet as changed
    (4000 of a 4000-note vault, asked before the scan took the index), or waited for the
    whole scan: it is refused, as ``embed`` is."""
    config = load_config(vault, {"snapshot_dir": str(tmp_path / "snap")})
    daemon = Daemon(config, socket_path=short_socket_path(), force_polling=True)
    reading, release = held(monkeypatch, daemon.engine, "apply")
    with running(daemon, release):
        assert reading.wait(10)
        args = ("reindex", "--dry-run", "--vault", str(vault), "--socket", str(daemon.socket_path))
        out = wikimem(*args)
        assert out.returncode == 2 and "would change" not in out.stdout
        assert "still reading the vault (status: scanning)" in out.stderr
        release.set()
        eventually(lambda: daemon.status()["state"] == "ready", "ready after the scan")
        assert "a rescan would change: 0 changed" in wikimem(*args).stdout


def test_the_daemons_log_shows_an_escape_in_a_synced_file_name_escaped_not_obeyed(
    vault: Path, start_daemon: Callable[..., DaemonProc]
) -> None:
    """A note's name is the vault's: an ESC in it reached the daemon's terminal raw, both in
    the problems said with the ready line and in a warning logged later."""
    (vault / "wiki" / "a\x1b[2Jb.md").write_bytes(b"## x\nbad \xff\n")
    daemon = start_daemon(vault)
    eventually(lambda: "a\\x1b[2Jb.md: invalid UTF-8" in daemon.output(), "the ready problems")
    (vault / "wiki" / "c\x1b]0;owned\x07d.md").write_bytes(b"## y\nbad \xff\n")
    line = "WARNING wiki/c\\x1b]0;owned\\x07d.md: invalid UTF-8"
    eventually(lambda: line in daemon.output(), "the later warning logged")
    assert "\x1b" not in daemon.output() and "\x07" not in daemon.output()


def test_a_symlink_note_to_the_journal_is_not_read_again_for_each_line_its_reading_adds(
    daemon: DaemonProc,
) -> None:
    """The daemon journals the changes it reads into ``journal.jsonl``; a symlink note that
    reads the journal changed with each line, so it was read and journaled again, for good
    (the cache dir's files are the daemon's own likewise)."""
    vault, journal = daemon.vault, daemon.vault / "journal.jsonl"
    (vault / "wiki" / "first.md").write_text("# First\n\nbrigantine\n", "utf-8")  # a line
    eventually(journal.exists, "the journal written")
    (vault / "log.md").symlink_to("journal.jsonl")

    def lines_on_log() -> list[str]:
        lines = [json.loads(line) for line in journal.read_text("utf-8").splitlines()]
        return [line["action"] for line in lines if line["path"] == "log.md"]

    def found(word: str) -> bool:
        hits = daemon.result("query", {"q": word, "parse_time": False})["hits"]
        return [h["path"] for h in hits] == [f"wiki/{word}.md"]

    eventually(lambda: lines_on_log() != [], "the symlink note read and journaled")
    for word in ("marker", "beacon"):  # changes after it, each applied in turn
        (vault / "wiki" / f"{word}.md").write_text(f"# M\n\n{word}\n", "utf-8")
        eventually(functools.partial(found, word), word)
    assert lines_on_log() == ["create"]


def test_a_folder_symlinked_out_of_the_vault_made_moved_or_removed_shows_at_once(
    daemon: DaemonProc, tmp_path: Path
) -> None:
    """Watchdog reports a symlink to a folder as a file, which the watcher dropped: `status`
    (and so `check`) named such a folder, or stopped naming it, only at the safety rescan."""
    vault, outside = daemon.vault, tmp_path / "outside"
    outside.mkdir()
    (outside / "x.md").write_text("# X\n\nelsewhere\n", "utf-8")
    v, s = str(vault), str(daemon.sock)

    def named(paths: set[str]) -> Callable[[], bool]:
        return lambda: set(skipped(daemon)) == paths

    (vault / "wiki" / "ext").symlink_to(outside, target_is_directory=True)
    eventually(named({"wiki/ext"}), "a symlinked folder made")
    assert wikimem("check", "--vault", v, "--socket", s, "--wait", "5").returncode == 0
    (vault / "wiki" / "ext").rename(vault / "ext")
    eventually(named({"ext"}), "moved")
    (vault / "ext").unlink()
    eventually(named(set()), "removed")
    (vault / "ext.md").symlink_to(outside, target_is_directory=True)  # named like a note
    eventually(named({"ext.md"}), "a symlinked folder named like a note")
    assert wikimem("check", "--vault", v, "--socket", s, "--wait", "5").returncode == 0
    (vault / "ext.md").unlink()
    eventually(named(set()), "removed too")
    incoming = tmp_path / "incoming"
    incoming.mkdir()
    (incoming / "link").symlink_to(outside, target_is_directory=True)
    incoming.rename(vault / "incoming")  # a folder holding one, moved in and out
    eventually(named({"incoming/link"}), "a folder holding one moved in")
    assert wikimem("check", "--vault", v, "--socket", s, "--wait", "5").returncode == 0
    (vault / "incoming").rename(tmp_path / "gone")
    eventually(named(set()), "and moved out")
    assert wikimem("check", "--vault", v, "--socket", s, "--wait", "5").returncode == 0
