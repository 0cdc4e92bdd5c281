"""The command line against a real daemon: what a new user meets in the first hour."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from daemon_harness import DaemonProc, child_env, eventually, short_socket_path, wikimem
from test_daemon_untrusted import running
from test_http_embedder import Stub, stub  # noqa: F401  (the fixture)

from tests.conftest import FakeObserver
from wikimem_watch.config import load_config
from wikimem_watch.daemon.service import Daemon


def settled(daemon: DaemonProc) -> bool:
    status = daemon.result("status")
    vectors = status["vectors"]
    return bool(status["pending"] == 0 and vectors["state"] == "ready" and vectors["pending"] == 0)


def serve(vault: Path, sock: Path, *extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "wikimem_watch", "serve", str(vault), "--socket", str(sock), *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=child_env(),
    )


def stop(proc: subprocess.Popen[str], sock: Path) -> tuple[str, str]:
    proc.terminate()
    try:
        out, err = proc.communicate(timeout=5)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate(timeout=5)
    sock.unlink(missing_ok=True)
    return out, err


def test_serve_prints_one_ready_line_on_stdout_and_its_problems_on_stderr(vault: Path) -> None:
    (vault / "diary" / "notes-to-self.md").write_text("## x\nnot a date\n", encoding="utf-8")
    sock = short_socket_path()
    proc = serve(vault, sock)
    try:
        assert proc.stdout is not None
        ready = proc.stdout.readline()  # blocks until the daemon is ready
    finally:
        out, err = stop(proc, sock)
    assert ready.startswith(f"wikimem-watch: ready: {vault.resolve()} on {sock} — 3 files")
    assert "1 diary + 2 wiki entries" in ready and "watcher" in ready
    assert out == ""
    problem = "diary/notes-to-self.md: diary file name is not a valid YYYY-MM-DD date"
    assert err.count(problem) == 1  # told once, with the ready line: not also as it was read


def test_serve_quiet_prints_nothing_when_ready(vault: Path) -> None:
    sock = short_socket_path()
    proc = serve(vault, sock, "--quiet")
    try:
        eventually(
            lambda: wikimem("status", "--socket", str(sock), "--json").returncode == 0,
            "daemon answers",
        )
    finally:
        out, err = stop(proc, sock)
    assert out == "" and "ready" not in err


@pytest.mark.parametrize(
    ("method", "params", "argv"),
    [
        ("days", {}, ("days",)),
        ("day", {"date": "2026-07-20"}, ("day", "2026-07-20")),
        ("note", {"path": "wiki/people.md"}, ("note", "./wiki/people.md")),
    ],
)
def test_json_of_days_day_and_note_is_the_socket_methods_object_with_or_without_daemon(
    daemon: DaemonProc, method: str, params: dict[str, object], argv: tuple[str, ...]
) -> None:
    expected = daemon.result(method, params)
    through = wikimem(*argv, "--vault", str(daemon.vault), "--socket", str(daemon.sock), "--json")
    alone = wikimem(*argv, "--vault", str(daemon.vault), "--in-process", "--json")
    assert json.loads(through.stdout) == expected
    assert json.loads(alone.stdout) == expected


def test_the_note_method_reads_paths_as_typed_and_refuses_ones_outside(
    daemon: DaemonProc,
) -> None:
    absolute = str(daemon.vault.resolve() / "wiki" / "people.md")
    for typed in ("people", "wiki/people", "./wiki/people.md", absolute):
        assert daemon.result("note", {"path": typed})["path"] == "wiki/people.md"
    rpc = daemon.rpc()
    try:
        error = rpc.call("note", {"path": "/wiki/people.md"})["error"]
    finally:
        rpc.close()
    assert error["code"] == -32602 and "outside the vault" in error["message"]


def test_status_in_process_has_the_daemons_shape_without_the_daemons_own_fields(
    daemon: DaemonProc,
) -> None:
    remote = daemon.result("status")
    local = json.loads(
        wikimem("status", "--vault", str(daemon.vault), "--in-process", "--json").stdout
    )
    own = {
        "socket",
        "pending",
        "watcher",
        "uptime_s",
        "connections",
        "socket_limits",
        "http",
        "snapshot",
        "scan_files",
    }
    assert set(local) == set(remote) - own - {"safety_rescan_s"}
    assert local["state"] == "in-process" and remote["state"] == "ready"
    for same in ("entries", "files", "unresolved_links", "unresolved", "digest", "embed"):
        assert local[same] == remote[same], same
    assert remote["unresolved"] == [
        {"id": "wiki/people.md#Ann", "path": "wiki/people.md", "line": 3, "target": "places"}
    ]


@pytest.mark.timeout(20)
def test_reindex_dry_run_through_the_daemon_lists_changes_and_applies_none(
    vault: Path, start_daemon: Callable[..., DaemonProc]
) -> None:
    # A long debounce keeps the edit pending in the watcher while we ask.
    daemon = start_daemon(vault, "--debounce-ms", "10000", "--safety-rescan-s", "0")
    before = daemon.result("status")["generation"]
    (vault / "wiki" / "people.md").write_text("## Ann\nAnn moved away.\n", encoding="utf-8")
    out = wikimem("reindex", "--socket", str(daemon.sock), "--dry-run", "--json")
    plan = json.loads(out.stdout)
    assert plan["paths"] == {"changed": ["wiki/people.md"], "removed": [], "skipped": []}
    assert (plan["changed"], plan["unchanged"], plan["dry_run"]) == (1, 1, True)
    assert daemon.result("status")["generation"] == before, "a dry run applies nothing"
    stats = daemon.result("reindex")
    assert stats["changed"] == 1 and daemon.result("status")["generation"] == before + 1


def test_check_prints_vault_warnings_only_with_verbose(
    vault: Path, start_daemon: Callable[..., DaemonProc]
) -> None:
    (vault / "diary" / "someday.md").write_text("## x\nwhen?\n", encoding="utf-8")
    daemon = start_daemon(vault)
    args = ("check", "--vault", str(vault), "--socket", str(daemon.sock))
    quiet = wikimem(*args)
    assert quiet.returncode == 0 and quiet.stderr == ""
    verbose = wikimem(*args, "--verbose")
    assert verbose.returncode == 0
    assert verbose.stderr.splitlines() == [
        "warning  diary/someday.md: diary file name is not a valid YYYY-MM-DD date; "
        "indexed as a note"
    ]


@pytest.mark.timeout(30)
def test_the_embedder_given_to_serve_is_used_by_later_queries_without_the_flag(
    vault: Path, start_daemon: Callable[..., DaemonProc]
) -> None:
    daemon = start_daemon(vault, "--embed", "hash")
    eventually(lambda: settled(daemon), "hash vectors ready")
    v, s = str(vault), str(daemon.sock)
    through = wikimem("query", "--vault", v, "--socket", s, "--json", "sailing")
    assert json.loads(through.stdout)["embedding_used"] is True
    assert through.stderr == ""
    table = wikimem("status", "--vault", v, "--socket", s).stdout
    assert "vectors  ready  2 rows  model hash-ngram23-v1  dim 64  pending 0" in table
    differs = wikimem("query", "--vault", v, "--socket", s, "--embed", "none", "sailing")
    assert "the daemon uses embed='hash', not 'none'" in differs.stderr
    daemon.stop()

    alone = wikimem("query", "--vault", v, "--json", "sailing")
    assert json.loads(alone.stdout)["embedding_used"] is True
    assert "with the 'hash' embedder this host's last daemon used" in alone.stderr
    plain = wikimem("query", "--vault", v, "--embed", "none", "--json", "sailing")
    assert json.loads(plain.stdout)["embedding_used"] is False, "a flag beats the memory"


@pytest.mark.timeout(60)
def test_embed_on_a_mismatched_cache_explains_that_rebuild_is_the_fix(
    vault: Path,
    start_daemon: Callable[..., DaemonProc],
    stub: Stub,  # noqa: F811
) -> None:
    daemon = start_daemon(vault, "--embed", "hash")
    eventually(lambda: settled(daemon), "hash vectors ready")
    daemon.stop()
    other = ("--embed", "http", "--embed-url", stub.url, "--embed-model", "stub-16")

    alone = wikimem("embed", "--vault", str(vault), *other)
    assert alone.returncode == 1
    assert "--rebuild" in alone.stderr and "another embedding model" in alone.stderr
    assert stub.requests == [], "a mismatch never re-embeds by itself"

    daemon = start_daemon(vault, *other)
    through = wikimem("embed", "--vault", str(vault), "--socket", str(daemon.sock))
    assert through.returncode == 1 and "--rebuild" in through.stderr
    rebuilt = wikimem("embed", "--vault", str(vault), "--socket", str(daemon.sock), "--rebuild")
    assert rebuilt.returncode == 0, rebuilt.stderr
    assert "ready  2 rows  model stub-16  dim 16" in rebuilt.stdout


def test_embed_in_process_shows_plain_progress_lines_when_stderr_is_not_a_terminal(
    vault: Path,
) -> None:
    out = wikimem(
        "embed",
        "--vault",
        str(vault),
        "--embed",
        "hash",
        "--rebuild",
        env_extra={"WIKIMEM_WATCH_EMBED_BATCH": "1"},
    )
    assert out.returncode == 0, out.stderr
    assert "\r" not in out.stderr
    assert out.stderr.splitlines() == ["embedding: 1/2", "embedding: 2/2"]


def test_a_socket_that_serves_another_vault_is_refused_not_written_through(
    daemon: DaemonProc, tmp_path: Path
) -> None:
    """WIKIMEM_SOCK left exported for vault A, then a write to vault B: it must not land in A."""
    other = tmp_path / "other-vault"
    other.mkdir()
    before = sorted(p.name for p in (daemon.vault / "diary").iterdir())
    env = {"WIKIMEM_SOCK": str(daemon.sock)}
    out = wikimem("write", "diary", "--vault", str(other), "kites", env_extra=env)
    assert out.returncode == 2, out.stderr
    assert "serves" in out.stderr and "WIKIMEM_SOCK" in out.stderr
    flag = wikimem("status", "--vault", str(other), "--socket", str(daemon.sock))
    assert flag.returncode == 2 and "serves" in flag.stderr
    assert sorted(p.name for p in (daemon.vault / "diary").iterdir()) == before
    assert not (other / "diary").exists()
    same = wikimem("status", "--vault", str(daemon.vault), "--json", env_extra=env)
    assert same.returncode == 0, same.stderr  # its own vault: fine


def test_a_batch_line_with_nan_gets_an_error_line_and_the_batch_goes_on(
    daemon: DaemonProc,
) -> None:
    """Python's json reads NaN, Infinity and 1e999; the request could not be sent on as JSON,
    and the traceback it made ended the batch."""
    lines = ['{"q": "x", "k": NaN}', '{"q": "x", "k": 1e999}', '{"q": "coffee"}']
    out = wikimem("query", "--vault", str(daemon.vault), "--json", "-", stdin="\n".join(lines))
    assert out.returncode == 1 and "Traceback" not in out.stderr, out.stderr
    answers = [json.loads(line) for line in out.stdout.splitlines()]
    assert [a.get("error", {}).get("code") for a in answers] == [-32700, -32700, None]
    assert "hits" in answers[2]


def test_a_stop_during_the_first_scan_never_says_ready_with_part_of_the_vault(
    tmp_path: Path,
) -> None:
    """Ctrl-C while the first scan runs: no "ready" line counting the files read so far
    (a ready line, when the scan won the race, names every file)."""
    import signal
    import time

    vault = tmp_path / "big"
    (vault / "wiki").mkdir(parents=True)
    for i in range(3000):
        (vault / "wiki" / f"n{i}.md").write_text(f"## n{i}\n\nnote {i}\n", encoding="utf-8")
    sock = short_socket_path()
    proc = serve(vault, sock)
    deadline = time.monotonic() + 20
    while not sock.exists() and time.monotonic() < deadline:  # listening: handlers are set
        time.sleep(0.005)
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=30)
    sock.unlink(missing_ok=True)
    assert proc.returncode == 0
    ready = [line for line in out.splitlines() if "ready:" in line]
    assert ready == [] or "— 3000 files" in ready[0], ready


def test_index_flags_given_to_a_query_a_daemon_answers_are_said_to_be_ignored(
    daemon: DaemonProc,
) -> None:
    out = wikimem("query", "--vault", str(daemon.vault), "--exclude", "diary/*", "coffee")
    assert "--exclude apply when a daemon starts" in out.stderr
    plain = wikimem("query", "--vault", str(daemon.vault), "coffee")
    assert "apply when a daemon starts" not in plain.stderr


def test_index_flags_given_to_embed_a_daemon_answers_are_said_to_be_ignored(
    daemon: DaemonProc,
) -> None:
    """``embed --exclude …`` with a daemon running embedded with the daemon's settings and
    said nothing of the flag."""
    out = wikimem("embed", "--vault", str(daemon.vault), "--exclude", "diary/*")
    assert "--exclude apply when a daemon starts" in out.stderr


@pytest.mark.parametrize("wait", ["-1", "nan"])
def test_stop_with_a_bad_wait_is_refused_and_leaves_the_daemon_running(
    daemon: DaemonProc, wait: str
) -> None:
    out = wikimem("stop", "--socket", str(daemon.sock), "--wait", wait)
    assert out.returncode == 2
    assert out.stderr.startswith("wikimem-watch: --wait ") and "still stopping" not in out.stderr
    assert daemon.proc.poll() is None and daemon.result("status")["state"] == "ready"


def test_check_compares_the_folders_status_lists_as_not_entered(
    vault: Path, tmp_path: Path
) -> None:
    """A symlinked folder leading outside is listed in ``status``; one removed while the
    watcher told nothing of it (here a scripted observer that tells nothing) must be told by
    ``check``: it said "ok" while ``status`` still listed the link."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "o.md").write_text("out there\n", encoding="utf-8")
    (vault / "linked").symlink_to(outside, target_is_directory=True)
    daemon = Daemon(
        load_config(vault),
        socket_path=short_socket_path(),
        safety_rescan_s=0,
        observer_factory=FakeObserver,
    )
    args = ("check", "--vault", str(vault), "--socket", str(daemon.socket_path))
    with running(daemon):
        eventually(lambda: daemon.state == "ready", "ready")
        assert wikimem(*args).returncode == 0
        (vault / "linked").unlink()
        stale = wikimem(*args)
        assert stale.returncode == 1, stale.stdout
        assert "skipped differs:   linked" in stale.stdout
        daemon.reindex()
        assert wikimem(*args).returncode == 0


def test_check_scans_the_notes_the_daemon_indexes_not_the_flags_given_to_check(
    vault: Path, start_daemon: Callable[..., DaemonProc]
) -> None:
    """A daemon served with ``--exclude 'wiki/*'`` was reported "missing in daemon:
    wiki/people.md" (exit 1) by a plain ``check``: the fresh scan took every note."""
    daemon = start_daemon(vault, "--exclude", "wiki/*")
    args = ("check", "--vault", str(vault), "--socket", str(daemon.sock))
    plain = wikimem(*args)
    assert plain.returncode == 0, plain.stdout
    assert plain.stdout.startswith("ok: 1 files, 1 entries")
    other = wikimem(*args, "--exclude", "diary/*")
    assert other.returncode == 0, other.stdout
    (vault / "diary" / "2026-07-20.md").unlink()
    (vault / "wiki" / "places.md").write_text("## Harbour\nboats\n", encoding="utf-8")
    eventually(lambda: daemon.result("status")["files"] == 0, "the diary file dropped")
    assert wikimem(*args).stdout.startswith("ok: 0 files, 0 entries")


def test_reindex_in_process_is_refused_not_sent_to_the_running_daemon(
    vault: Path, daemon: DaemonProc
) -> None:
    """``reindex --in-process`` ("do not use a running daemon") rescanned the running daemon
    (exit 0, "reindexed: ..."); with ``--dry-run`` it is the in-process plan."""
    args = ("reindex", "--vault", str(vault), "--socket", str(daemon.sock), "--in-process")
    refused = wikimem(*args)
    assert refused.returncode == 2 and refused.stdout == ""
    assert "reindex --in-process: a rescan is a running daemon's" in refused.stderr
    planned = wikimem(*args, "--dry-run")
    assert planned.returncode == 0
    assert planned.stdout.startswith("a rescan would change: 2 changed, 0 removed, 0 unchanged")


def test_write_in_process_beside_a_running_daemon_is_refused_and_writes_nothing(
    vault: Path, daemon: DaemonProc
) -> None:
    """It wrote the note and the journal had it twice: once as the write, once as an
    external edit the daemon saw. Without a daemon it still writes in-process."""
    day = vault / "diary" / "2026-07-21.md"
    before = day.read_bytes() if day.exists() else None
    args = ("write", "diary", "--vault", str(vault), "--socket", str(daemon.sock))
    refused = wikimem(*args, "--in-process", "--date", "2026-07-21", "--time", "09:00", "kites")
    assert refused.returncode == 2 and refused.stdout == ""
    assert "drop --in-process" in refused.stderr
    assert (day.read_bytes() if day.exists() else None) == before
    assert daemon.result("journal")["entries"] == []
    daemon.result("shutdown")
    daemon.proc.wait(10)
    alone = wikimem(*args, "--in-process", "--date", "2026-07-21", "--time", "09:00", "kites")
    assert alone.returncode == 0, alone.stderr
    assert "kites" in day.read_text(encoding="utf-8")
