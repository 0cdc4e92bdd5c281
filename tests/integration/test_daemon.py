"""The real daemon in a subprocess: file operations become searchable, errors never kill it."""

from __future__ import annotations

import json
import os
import signal
import socket
import stat
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from daemon_harness import DaemonProc, Rpc, eventually, short_socket_path, wikimem
from test_daemon_untrusted import running
from watchdog.events import DirCreatedEvent, DirModifiedEvent

from tests.conftest import FakeObserver
from wikimem_watch.config import load_config
from wikimem_watch.daemon.runtime import default_socket_path, lock_path
from wikimem_watch.daemon.service import Daemon

pytestmark = pytest.mark.timeout(60)


def paths_for(rpc: Rpc, q: str) -> set[str]:
    hits = rpc.result("query", {"q": q, "k": 50, "parse_time": False})["hits"]
    return {h["path"] for h in hits}


def searchable(rpc: Rpc, q: str, expected: set[str]) -> Callable[[], bool]:
    return lambda: paths_for(rpc, q) == expected


def test_status_describes_a_ready_index(daemon: DaemonProc) -> None:
    rpc = daemon.rpc()
    status = rpc.result("status")
    assert status["state"] == "ready" and status["pid"] == daemon.proc.pid
    assert status["entries"] == {"diary": 1, "wiki": 1, "total": 2}
    assert status["files"] == 2 and status["skipped"] == []
    assert status["unresolved_links"] == 1  # [[places]]
    assert status["socket"] == str(daemon.sock) and status["vault"] == str(daemon.vault.resolve())
    assert status["watcher"] in ("native", "polling") and status["pending"] == 0
    assert status["vectors"] == {"state": "off"}
    for key in ("generation", "last_change_at", "uptime_s", "digest", "version", "host"):
        assert key in status
    hello = rpc.result("hello")
    assert "query" in hello["capabilities"] and hello["protocol"] == 1
    # A client of a later protocol may introduce itself; it still learns what this one speaks.
    assert rpc.result("hello", {"client": "x", "protocol": 2})["protocol"] == 1
    rpc.close()


def test_every_field_a_reply_carries_is_named_in_the_protocol_docs(daemon: DaemonProc) -> None:
    """docs/protocol.md names each field the methods send (a field sent but never documented
    is one a client cannot know to read)."""
    doc = (Path(__file__).resolve().parents[2] / "docs" / "protocol.md").read_text("utf-8")
    rpc = daemon.rpc()
    status = rpc.result("status")
    query = rpc.result("query", {"q": "coffee yesterday", "now": "2026-07-21T09:00"})
    replies = {
        "hello": rpc.result("hello"),
        "status": status,
        "status.snapshot": status["snapshot"],
        "status.socket_limits": status["socket_limits"],
        "status.cache": status["cache"],
        "query": query,
        "query.hits": query["hits"][0],
        "query.time_range": query["time_range"],
        "days": rpc.result("days"),
        "day": rpc.result("day", {"date": "2026-07-20"})["entries"][0],
        "file_digests": rpc.result("file_digests"),
        "reindex": rpc.result("reindex", {"dry_run": True}),
        "journal": rpc.result("journal"),
    }
    rpc.close()
    for where, reply in replies.items():
        missing = {k for k in reply if f"`{k}`" not in doc and f'"{k}"' not in doc}
        assert not missing, f"docs/protocol.md never names {where} field(s) {sorted(missing)}"


def test_socket_is_private_and_cache_dir_is_gitignored(daemon: DaemonProc) -> None:
    assert stat.S_IMODE(daemon.sock.stat().st_mode) == 0o600
    assert (daemon.vault / ".wikimem" / ".gitignore").read_text() == "*\n"
    assert stat.S_IMODE(lock_path(load_config(daemon.vault)).parent.stat().st_mode) == 0o700


def test_create_edit_and_delete_are_reflected(daemon: DaemonProc) -> None:
    rpc = daemon.rpc()
    note = daemon.vault / "wiki" / "boats.md"
    note.write_text("# Boats\n\n## Dinghy\nA wooden dinghy named zephyrine.\n", encoding="utf-8")
    eventually(searchable(rpc, "zephyrine", {"wiki/boats.md"}), "created note searchable")
    note.write_text("# Boats\n\n## Dinghy\nNow called quillwort.\n", encoding="utf-8")
    eventually(searchable(rpc, "quillwort", {"wiki/boats.md"}), "edit searchable")
    assert paths_for(rpc, "zephyrine") == set()
    diary = daemon.vault / "diary" / "2026-07-20.md"
    with diary.open("a", encoding="utf-8") as fh:
        fh.write("\n## 21:00\nEvening marmalade tasting.\n")
    eventually(searchable(rpc, "marmalade", {"diary/2026-07-20.md"}), "appended entry")
    assert rpc.result("days")["days"] == [{"date": "2026-07-20", "entries": 2}]
    note.unlink()
    eventually(searchable(rpc, "quillwort", set()), "deleted note gone")
    err = rpc.call("note", {"path": "wiki/boats.md"})["error"]
    assert err["code"] == -32004
    rpc.close()


def test_rename_and_atomic_save_end_like_a_fresh_scan(daemon: DaemonProc) -> None:
    rpc = daemon.rpc()
    src, dst = daemon.vault / "wiki" / "people.md", daemon.vault / "wiki" / "friends.md"
    src.rename(dst)
    eventually(searchable(rpc, "sailing", {"wiki/friends.md"}), "renamed note")
    tmp = daemon.vault / "wiki" / ".friends.md.tmp-1234"
    tmp.write_text("# People\n\n## Ann\nAnn now prefers kayaking.\n", encoding="utf-8")
    os.replace(tmp, dst)
    eventually(searchable(rpc, "kayaking", {"wiki/friends.md"}), "atomic save")
    assert paths_for(rpc, "sailing") == set()
    swap = daemon.vault / "wiki" / ".friends.md.swp"
    swap.write_bytes(b"\x00binary swap kayaking")
    (daemon.vault / "wiki" / "friends.md~").write_text("backup kayaking", encoding="utf-8")
    assert (
        wikimem("check", "--vault", str(daemon.vault), "--socket", str(daemon.sock)).returncode == 0
    )
    rpc.close()


def test_directory_moves_and_deletes_carry_every_note(daemon: DaemonProc) -> None:
    rpc = daemon.rpc()
    proj = daemon.vault / "projects" / "alpha"
    proj.mkdir(parents=True)
    for i in range(5):
        (proj / f"n{i}.md").write_text(f"# N{i}\n\nvelvetleaf item {i}\n", encoding="utf-8")
    expected = {f"projects/alpha/n{i}.md" for i in range(5)}
    eventually(searchable(rpc, "velvetleaf", expected), "new directory indexed")
    (daemon.vault / "projects").rename(daemon.vault / "archive")
    moved = {p.replace("projects/", "archive/") for p in expected}
    eventually(searchable(rpc, "velvetleaf", moved), "moved directory re-indexed")
    (daemon.vault / "archive" / "alpha").rename(daemon.vault / ".trash")
    eventually(searchable(rpc, "velvetleaf", set()), "directory moved into .trash dropped")
    result = wikimem("check", "--vault", str(daemon.vault), "--socket", str(daemon.sock))
    assert result.returncode == 0, result.stdout
    rpc.close()


@pytest.mark.timeout(120)
def test_a_burst_of_files_ends_equal_to_a_fresh_scan(daemon: DaemonProc) -> None:
    burst = daemon.vault / "burst"
    burst.mkdir()
    for i in range(600):
        (burst / f"b{i:04}.md").write_text(f"# B{i}\n\n## S\nburstword number {i}\n", "utf-8")
    rpc = daemon.rpc()
    eventually(lambda: rpc.result("status")["files"] == 602, "all burst files indexed", 60)
    result = wikimem("check", "--vault", str(daemon.vault), "--socket", str(daemon.sock))
    assert result.returncode == 0, result.stdout
    rpc.close()


def test_a_second_daemon_for_the_same_vault_exits_naming_the_first(
    daemon: DaemonProc, start_daemon: Callable[..., DaemonProc]
) -> None:
    second = wikimem("serve", str(daemon.vault), "--socket", str(short_socket_path()), timeout=30)
    assert second.returncode == 2
    assert f"pid {daemon.proc.pid}" in second.stderr and str(daemon.sock) in second.stderr
    assert "Traceback" not in second.stderr
    assert daemon.result("status")["state"] == "ready"


def test_restart_after_kill_9_replaces_the_stale_socket_and_lock(
    vault: Path, start_daemon: Callable[..., DaemonProc]
) -> None:
    first = start_daemon(vault)
    first.proc.send_signal(signal.SIGKILL)
    first.proc.wait(5)
    assert first.sock.exists() and lock_path(load_config(vault)).exists()  # left behind
    second = start_daemon(vault, sock=first.sock)
    assert second.result("status")["pid"] == second.proc.pid


def test_malformed_requests_get_errors_and_the_daemon_keeps_serving(daemon: DaemonProc) -> None:
    rpc = daemon.rpc()
    bad_json = rpc.send_raw(b"{this is not json\n")
    assert bad_json is not None and bad_json["error"]["code"] == -32700
    assert bad_json["id"] is None
    unknown = rpc.call("no_such_method")
    assert unknown["error"]["code"] == -32601
    bad_params = rpc.call("query", {"q": "coffee", "k": "ten"})
    assert bad_params["error"]["code"] == -32602 and "k" in bad_params["error"]["message"]
    batch = rpc.send_raw(b'[{"jsonrpc":"2.0","id":1,"method":"status"}]\n')
    assert batch is not None and batch["error"]["code"] == -32600
    # a notification gets no reply: the next reply belongs to the next request
    rpc.sock.sendall(b'{"jsonrpc":"2.0","method":"status"}\n')
    assert rpc.call("hello")["id"] == rpc.next_id
    assert "hits" in rpc.result("query", {"q": "coffee"})
    rpc.close()


def test_a_last_line_without_newline_is_answered_when_the_client_half_closes(
    daemon: DaemonProc,
) -> None:
    """``printf '{...}' | nc -N -U SOCK``: the request before EOF is answered, not dropped."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(10)
    sock.connect(str(daemon.sock))
    sock.sendall(
        b'{"jsonrpc":"2.0","id":1,"method":"hello"}\n{"jsonrpc":"2.0","id":2,"method":"days"}'
    )
    sock.shutdown(socket.SHUT_WR)
    with sock.makefile("rb") as reader:
        lines = reader.readlines()
    sock.close()
    replies = [json.loads(line) for line in lines]
    assert [r["id"] for r in replies] == [1, 2]
    assert replies[1]["result"]["days"] == [{"date": "2026-07-20", "entries": 1}]


def test_an_oversized_line_closes_only_that_connection(daemon: DaemonProc) -> None:
    other = daemon.rpc()
    rpc = daemon.rpc()
    reply = rpc.send_raw(
        b'{"jsonrpc":"2.0","id":1,"method":"query","params":{"q":"' + b"x" * (1024 * 1024 + 10)
    )
    assert reply is not None and reply["error"]["code"] == -32600
    assert rpc.reader.readline() == b""  # closed
    rpc.close()
    assert other.result("hello")["name"] == "wikimem-watch"
    other.close()


def test_an_idle_or_vanished_client_does_not_block_others(daemon: DaemonProc) -> None:
    idle = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    idle.connect(str(daemon.sock))
    idle.sendall(b'{"jsonrpc":"2.0","id":1,"method":"sta')  # half a request, then silence
    vanished = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    vanished.connect(str(daemon.sock))
    vanished.sendall(b'{"jsonrpc":"2.0","id":1,"method":"status"}\n')
    vanished.close()  # gone before its reply
    errors: list[BaseException] = []

    def client() -> None:
        try:
            rpc = daemon.rpc()
            for _ in range(20):
                assert rpc.result("query", {"q": "coffee"})["hits"]
            rpc.close()
        except BaseException as exc:
            errors.append(exc)
            raise

    threads = [threading.Thread(target=client) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    idle.close()
    assert not errors
    assert not any(t.is_alive() for t in threads), "every client got its 20 answers"


def test_sigterm_removes_the_socket_and_lock_and_exits_0(daemon: DaemonProc) -> None:
    daemon.proc.send_signal(signal.SIGTERM)
    assert daemon.proc.wait(10) == 0
    assert not daemon.sock.exists()
    assert not lock_path(load_config(daemon.vault)).exists()


def test_cli_commands_go_through_the_daemon(daemon: DaemonProc) -> None:
    v, s = str(daemon.vault), str(daemon.sock)
    status = wikimem("status", "--vault", v, "--socket", s, "--json")
    assert status.returncode == 0 and json.loads(status.stdout)["pid"] == daemon.proc.pid
    query = wikimem("query", "--vault", v, "--socket", s, "--json", "coffee")
    assert query.returncode == 0 and query.stderr == ""
    assert json.loads(query.stdout)["hits"][0]["path"] == "diary/2026-07-20.md"
    batch = wikimem(
        "query",
        "--vault",
        v,
        "--socket",
        s,
        "--json",
        "-",
        stdin='{"q": "sailing"}\nnot json\n{"q": "x", "k": 0}\n',
    )
    lines = [json.loads(x) for x in batch.stdout.splitlines()]
    assert lines[0]["hits"][0]["path"] == "wiki/people.md"
    assert lines[1]["error"]["code"] == -32700 and lines[2]["error"]["code"] == -32602
    assert wikimem("days", "--socket", s).stdout.split() == ["2026-07-20", "1"]
    assert "Ann" in wikimem("note", "--socket", s, "wiki/people.md").stdout
    assert wikimem("day", "--socket", s, "2026-07-20", "--json").returncode == 0
    assert wikimem("reindex", "--socket", s).returncode == 0
    assert wikimem("check", "--vault", v, "--socket", s).returncode == 0
    stop = wikimem("stop", "--socket", s)
    assert stop.returncode == 0 and str(daemon.proc.pid) in stop.stdout
    assert daemon.proc.poll() == 0  # gone when stop says so: `stop && serve` is safe


def test_check_lists_the_files_that_differ(vault: Path, tmp_path: Path) -> None:
    # a watcher that reports nothing (and no safety rescan): the daemon misses both changes
    config = load_config(vault, {"snapshot_dir": str(tmp_path / "snap")})
    daemon = Daemon(
        config,
        socket_path=short_socket_path(),
        safety_rescan_s=0,
        observer_factory=FakeObserver,
    )
    with running(daemon):
        eventually(lambda: daemon.state == "ready", "ready")
        (vault / "wiki" / "people.md").unlink()
        (vault / "diary" / "2026-07-21.md").write_text("## 09:00\ntea\n", encoding="utf-8")
        (vault / "wiki" / "a\nb.md").write_text("## x\nbody\n", encoding="utf-8")
        v, s = str(vault), str(daemon.socket_path)
        result = wikimem("check", "--vault", v, "--socket", s)
    assert result.returncode == 1
    assert "from a fresh scan (3 differences):" in result.stdout
    assert "stale in daemon:   wiki/people.md" in result.stdout
    assert "missing in daemon: diary/2026-07-21.md" in result.stdout
    assert "missing in daemon: wiki/a\\nb.md\n" in result.stdout  # one line, escaped
    assert "diary/2026-07-20.md" not in result.stdout


def test_without_a_daemon_query_answers_in_process_and_says_so(vault: Path) -> None:
    result = wikimem("query", "--vault", str(vault), "--json", "coffee")
    assert result.returncode == 0
    assert result.stderr.count("\n") == 1 and "in-process" in result.stderr
    assert json.loads(result.stdout)["hits"][0]["path"] == "diary/2026-07-20.md"
    stop = wikimem("stop", "--vault", str(vault))
    assert stop.returncode == 2 and stop.stderr.startswith("wikimem-watch: no daemon")


@pytest.mark.parametrize("custom", [False, True])
def test_clients_find_the_socket_from_the_vault_alone(
    vault: Path, start_daemon: Callable[..., DaemonProc], custom: bool
) -> None:
    # default path, or a custom --socket found through the vault's lock file
    sock = short_socket_path() if custom else default_socket_path(load_config(vault))
    proc = start_daemon(vault, sock=sock)
    status = wikimem("status", "--vault", str(vault), "--json")
    assert status.returncode == 0, status.stderr
    assert json.loads(status.stdout)["socket"] == str(proc.sock)
    query = wikimem("query", "--vault", str(vault), "sailing")
    assert query.returncode == 0 and query.stderr == ""


def test_directories_moved_out_of_and_into_the_vault(daemon: DaemonProc, tmp_path: Path) -> None:
    rpc = daemon.rpc()
    outside = tmp_path / "outside"
    (outside / "sub").mkdir(parents=True)
    for i in range(3):
        (outside / "sub" / f"o{i}.md").write_text(f"# O{i}\n\nwanderlust {i}\n", "utf-8")
    outside.rename(daemon.vault / "imported")
    inside = {f"imported/sub/o{i}.md" for i in range(3)}
    eventually(searchable(rpc, "wanderlust", inside), "directory moved in")
    (daemon.vault / "imported").rename(tmp_path / "gone")
    eventually(searchable(rpc, "wanderlust", set()), "directory moved out")
    rpc.close()


@pytest.mark.timeout(60)
def test_poll_mode_watches_by_polling(vault: Path, start_daemon: Callable[..., DaemonProc]) -> None:
    proc = start_daemon(vault, "--poll")
    rpc = proc.rpc()
    assert rpc.result("status")["watcher"] == "polling"
    (vault / "wiki" / "polled.md").write_text("# P\n\nbrambleberry\n", "utf-8")
    eventually(searchable(rpc, "brambleberry", {"wiki/polled.md"}), "polled change", 20)
    rpc.close()


def test_bad_files_are_skipped_and_reported_while_serving(daemon: DaemonProc) -> None:
    (daemon.vault / "wiki" / "blob.md").write_bytes(b"\x00\x01 binary, not a note")
    (daemon.vault / "wiki" / "latin.md").write_bytes("## Café\nun caf\xe9 noir\n".encode("latin-1"))
    (daemon.vault / "diary" / "2026-13-40.md").write_text(
        "## 08:00\nnot a date\n", encoding="utf-8"
    )

    def reported() -> bool:
        status = daemon.result("status")
        skipped = {s["path"]: s["reason"] for s in status["skipped"]}
        return "wiki/blob.md" in skipped and {"wiki/latin.md", "diary/2026-13-40.md"} <= set(
            status["warnings"]
        )

    eventually(reported, "bad files reported in status")
    status = daemon.result("status")
    assert "binary" in {s["path"]: s["reason"] for s in status["skipped"]}["wiki/blob.md"]
    hits = daemon.result("query", {"q": "noir"})["hits"]
    assert [h["path"] for h in hits] == ["wiki/latin.md"]  # degraded, still indexed
    assert daemon.result("status")["state"] == "ready"


def test_a_note_whose_stat_fails_is_skipped_as_a_fresh_scan_skips_it(
    vault: Path, start_daemon: Callable[..., DaemonProc]
) -> None:
    """A symlink loop is listed by the walk but cannot be stat'ed: a fresh scan reads it and
    skips it, so the daemon must too, on a cold start and on a start from the snapshot (its
    stat walk dropped it, and ``check`` said "skipped differs")."""
    (vault / "wiki" / "loop.md").symlink_to("loop.md")
    v = str(vault)
    for loaded in (False, True):
        proc = start_daemon(vault)
        status = proc.result("status")
        assert status["snapshot"]["loaded"] is loaded
        assert [s["path"] for s in status["skipped"]] == ["wiki/loop.md"]
        assert wikimem("check", "--vault", v, "--socket", str(proc.sock)).returncode == 0
        proc.stop()


def test_a_restart_starts_from_the_snapshot_and_rereads_only_changed_files(
    vault: Path, start_daemon: Callable[..., DaemonProc]
) -> None:
    """ADR-0015: the first daemon saves a snapshot; the next one loads it, re-reads the one
    file edited while no daemon ran, and ends equal to a fresh scan (``check``)."""
    for path in vault.rglob("*.md"):
        os.utime(path, (time.time() - 1000, time.time() - 1000))  # not racy
    first = start_daemon(vault)
    assert first.result("status")["snapshot"]["loaded"] is False
    first.stop()  # saves the snapshot (it would also, after SNAPSHOT_IDLE_S without changes)
    (vault / "wiki" / "people.md").write_text("## Bob\nBob rows a kayak.\n", encoding="utf-8")
    second = start_daemon(vault)
    snap = second.result("status")["snapshot"]
    assert snap["loaded"] is True and snap["reread"] == 1
    hits = second.result("query", {"q": "kayak"})["hits"]
    assert [h["id"] for h in hits] == ["wiki/people.md#Bob"]
    v, s = str(vault), str(second.sock)
    assert wikimem("check", "--vault", v, "--socket", s).returncode == 0


def _permissions_hold(tmp_path: Path) -> bool:
    """Whether this process is denied a folder it chmods to 000 (not as root with its
    capabilities; ``setpriv --bounding-set=-dac_override,-dac_read_search`` is enough)."""
    probe = tmp_path / "probe"
    probe.mkdir(mode=0)
    try:
        os.listdir(probe)
    except PermissionError:
        return True
    finally:
        probe.chmod(0o755)
    return False


def test_a_folder_made_unreadable_and_readable_again_is_seen_at_once(
    daemon: DaemonProc, tmp_path: Path
) -> None:
    if not _permissions_hold(tmp_path):
        pytest.skip("this process reads any folder (root)")
    rpc = daemon.rpc()
    wiki = daemon.vault / "wiki"
    v, s = str(daemon.vault), str(daemon.sock)
    try:
        wiki.chmod(0)
        eventually(searchable(rpc, "sailing", set()), "notes of a folder made unreadable gone")
        assert wikimem("check", "--vault", v, "--socket", s, "--wait", "5").returncode == 0
        skipped = rpc.result("status")["skipped"]
        assert [(x["path"], x["reason"].split(" (")[0]) for x in skipped] == [
            ("wiki", "folder not readable")
        ]
        wiki.chmod(0o755)
        eventually(searchable(rpc, "sailing", {"wiki/people.md"}), "its notes back")
        assert wikimem("check", "--vault", v, "--socket", s, "--wait", "5").returncode == 0
        assert rpc.result("status")["skipped"] == []  # not "its notes are not indexed"
    finally:
        wiki.chmod(0o755)
        rpc.close()


def test_a_symlink_to_a_note_made_again_is_read_again(
    vault: Path, start_daemon: Callable[..., DaemonProc]
) -> None:
    """A symlink whose note is deleted dangles (out of the index); when the note is made
    again, a fresh scan reads the symlink too, so the daemon must, on a running daemon and
    on one started from the snapshot while it dangled."""
    people = vault / "wiki" / "people.md"
    text = people.read_text(encoding="utf-8")
    (vault / "alias.md").symlink_to("wiki/people.md")
    both = {"alias.md", "wiki/people.md"}
    for loaded in (False, True):
        proc = start_daemon(vault)
        assert proc.result("status")["snapshot"]["loaded"] is loaded
        rpc = proc.rpc()
        if not loaded:
            assert paths_for(rpc, "sailing") == both
            people.unlink()
            eventually(searchable(rpc, "sailing", set()), "the note and its symlink dropped")
        people.write_text(text, encoding="utf-8")
        eventually(searchable(rpc, "sailing", both), "the symlink read with its note")
        check = wikimem("check", "--vault", str(vault), "--socket", str(proc.sock))
        assert check.returncode == 0, check.stdout
        rpc.close()
        proc.stop()
        people.unlink()


def test_a_note_only_the_listing_of_a_new_polled_folder_saw_leaves_when_it_is_deleted(
    vault: Path,
) -> None:
    """The polling observer reports a new folder and the daemon lists it, reading a note made
    after the observer looked; the note is deleted before it looks again, so all it reports
    is that the folder's listing changed. The note must leave the index (it stayed until the
    safety rescan: a burst of notes made and deleted left some behind)."""
    observer = FakeObserver()
    daemon = Daemon(
        load_config(vault), socket_path=short_socket_path(), safety_rescan_s=0, force_polling=True
    )
    daemon.watcher.polling_factory = lambda: observer
    folder = vault / "drafts"
    with running(daemon):
        eventually(lambda: daemon.state == "ready", "ready")
        folder.mkdir()
        (folder / "a.md").write_text("## x\nbrief\n", encoding="utf-8")
        observer.emit(DirCreatedEvent(str(folder)))
        eventually(lambda: "drafts/a.md" in daemon.engine.files, "the new folder listed")
        (folder / "a.md").unlink()
        observer.emit(DirModifiedEvent(str(folder)))
        eventually(lambda: "drafts/a.md" not in daemon.engine.files, "the deleted note dropped")
        check = wikimem("check", "--vault", str(vault), "--socket", str(daemon.socket_path))
    assert check.returncode == 0, check.stdout


def test_watching_goes_on_after_a_folder_moved_out_is_deleted_outside(
    daemon: DaemonProc, tmp_path: Path
) -> None:
    """A folder moved out of the vault keeps its inotify watch under its old path; a folder
    made and deleted at that path, then the moved one deleted outside, ended watchdog's
    reader with a ``KeyError``: no change was seen again until the safety rescan."""
    rpc = daemon.rpc()
    vault, outside = daemon.vault, tmp_path / "outside"
    (vault / "wiki").rename(outside)
    eventually(searchable(rpc, "sailing", set()), "the folder moved out")
    (vault / "wiki").mkdir()
    (vault / "wiki" / "stub.md").write_text("# Stub\n\nplaceholder\n", "utf-8")
    eventually(searchable(rpc, "placeholder", {"wiki/stub.md"}), "a folder of that name made")
    (vault / "wiki" / "stub.md").unlink()
    (vault / "wiki").rmdir()
    (vault / "diary" / "2026-07-21.md").write_text("## 09:00\nmarker\n", "utf-8")
    eventually(searchable(rpc, "marker", {"diary/2026-07-21.md"}), "after the folder deleted")
    for path in outside.iterdir():
        path.unlink()
    outside.rmdir()
    (vault / "diary" / "2026-07-22.md").write_text("## 10:00\nzeppelins overhead\n", "utf-8")
    eventually(searchable(rpc, "zeppelins", {"diary/2026-07-22.md"}), "an edit after that")
    assert rpc.result("status")["watcher"] == "native"
    v, s = str(vault), str(daemon.sock)
    assert wikimem("check", "--vault", v, "--socket", s, "--wait", "5").returncode == 0
    rpc.close()


def test_a_symlink_note_to_a_file_no_walk_lists_follows_its_edits_at_once(
    vault: Path, start_daemon: Callable[..., DaemonProc], tmp_path: Path
) -> None:
    """A symlink note whose target is inside the vault but no note (a ``.txt``, a file in a
    dot-folder) is indexed by a fresh scan; its target's edits were dropped with the
    target's events, so the daemon kept the old text until the safety rescan."""
    (vault / ".hidden").mkdir()
    (vault / ".hidden" / "a.txt").write_text("# A\n\nalpha\n", "utf-8")
    (vault / "wiki" / "b.txt").write_text("# B\n\nbravo\n", "utf-8")
    (vault / "wiki" / "a.md").symlink_to("../.hidden/a.txt")
    (vault / "b.md").symlink_to("wiki/b.txt")
    proc = start_daemon(vault)
    rpc = proc.rpc()
    v, s = str(vault), str(proc.sock)
    assert paths_for(rpc, "alpha") == {"wiki/a.md"} and paths_for(rpc, "bravo") == {"b.md"}
    (vault / ".hidden" / "a.txt").write_text("# A\n\ncharlie\n", "utf-8")
    (vault / "wiki" / "b.txt").write_text("# B\n\ndelta\n", "utf-8")
    eventually(searchable(rpc, "charlie", {"wiki/a.md"}), "the dot-folder target's edit")
    eventually(searchable(rpc, "delta", {"b.md"}), "the .txt target's edit")
    assert wikimem("check", "--vault", v, "--socket", s, "--wait", "5").returncode == 0
    (vault / ".hidden").rename(tmp_path / "away")
    eventually(searchable(rpc, "charlie", set()), "the dot-folder moved out of the vault")
    (tmp_path / "away").rename(vault / ".hidden")
    eventually(searchable(rpc, "charlie", {"wiki/a.md"}), "and moved back")
    (vault / "wiki").rename(vault / "notes")  # b.md now dangles: gone, as a fresh scan sees
    eventually(searchable(rpc, "delta", set()), "the .txt target's folder moved")
    assert wikimem("check", "--vault", v, "--socket", s, "--wait", "5").returncode == 0
    rpc.close()


def test_a_note_written_in_place_through_a_hard_link_changes_under_every_name(
    vault: Path, start_daemon: Callable[..., DaemonProc]
) -> None:
    """Two names of one file: the OS reports the name written, a fresh scan reads both."""
    os.link(vault / "wiki" / "people.md", vault / "diary" / "2026-07-21.md")
    proc = start_daemon(vault)
    rpc = proc.rpc()
    assert paths_for(rpc, "sailing") == {"wiki/people.md", "diary/2026-07-21.md"}
    with open(vault / "wiki" / "people.md", "w", encoding="utf-8") as note:  # in place
        note.write("## 09:00\nAnn rows a kayak.\n")
    eventually(searchable(rpc, "kayak", {"wiki/people.md", "diary/2026-07-21.md"}), "both names")
    check = wikimem("check", "--vault", str(vault), "--socket", str(proc.sock), "--wait", "5")
    assert check.returncode == 0, check.stdout
    rpc.close()


def test_edits_in_a_folder_unreadable_at_the_start_are_seen_once_it_is_readable(
    vault: Path, start_daemon: Callable[..., DaemonProc], tmp_path: Path
) -> None:
    """A folder that cannot be read gets no watch; made readable, its notes were listed
    again, but their edits after that were not seen until the safety rescan."""
    if not _permissions_hold(tmp_path):
        pytest.skip("this process reads any folder (root)")
    wiki = vault / "wiki"
    wiki.chmod(0)
    try:
        proc = start_daemon(vault)
        rpc = proc.rpc()
        assert paths_for(rpc, "sailing") == set()
        wiki.chmod(0o755)
        eventually(searchable(rpc, "sailing", {"wiki/people.md"}), "its notes listed")
        (wiki / "people.md").write_text("# People\n\n## Ann\nAnn rows a kayak.\n", "utf-8")
        (wiki / "new.md").write_text("# New\n\nquokka\n", "utf-8")
        eventually(searchable(rpc, "kayak", {"wiki/people.md"}), "an edit in it")
        eventually(searchable(rpc, "quokka", {"wiki/new.md"}), "a note made in it")
        v, s = str(vault), str(proc.sock)
        assert wikimem("check", "--vault", v, "--socket", s, "--wait", "5").returncode == 0
        rpc.close()
    finally:
        wiki.chmod(0o755)
