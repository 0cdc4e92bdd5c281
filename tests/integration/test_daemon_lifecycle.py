"""The daemon's lifecycle and its per-machine files, with a real ``serve`` subprocess: where
its lock and socket go, what it does when they (or its vault) vanish, signals, and a client
facing a daemon that does not answer."""

from __future__ import annotations

import json
import os
import shutil
import signal
import stat
from collections.abc import Callable
from pathlib import Path

import pytest
from daemon_harness import DaemonProc, eventually, wikimem

from wikimem_watch.config import load_config
from wikimem_watch.daemon.runtime import default_socket_path, lock_path

pytestmark = pytest.mark.timeout(60)


def test_a_temp_runtime_dir_another_user_made_first_does_not_stop_the_daemon(
    vault: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    start_daemon: Callable[..., DaemonProc],
) -> None:
    """Without ``$XDG_RUNTIME_DIR`` the lock went to ``<tmp>/wikimem-watch-<uid>``, and a
    directory of that name another local user made first kept every daemon from starting."""
    shared = tmp_path / "tmp"
    shared.mkdir(mode=0o1777)
    squatted = shared / f"wikimem-watch-{os.getuid()}"
    theirs = tmp_path / "theirs"
    theirs.mkdir(mode=0o777)
    if os.getuid() == 0:
        squatted.mkdir(mode=0o777)
        os.chown(squatted, 4242, 4242)
    else:
        squatted.symlink_to(theirs, target_is_directory=True)
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    monkeypatch.setenv("TMPDIR", str(shared))
    daemon = start_daemon(vault)
    assert daemon.result("status")["state"] == "ready"
    assert list(theirs.iterdir()) == [] and list(squatted.iterdir()) == []


def test_a_stopped_daemon_gets_a_clear_timeout_not_a_hang(
    daemon: DaemonProc, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A SIGSTOPped daemon still takes connections (the kernel queues them), so `status`
    and `query` waited for a reply DEFAULT_TIMEOUT_S (ten minutes)."""
    from wikimem_watch.errors import DaemonUnavailable
    from wikimem_watch.shells import client
    from wikimem_watch.shells.cli import main

    monkeypatch.setattr(client, "QUICK_TIMEOUT_S", 0.5)
    os.kill(daemon.proc.pid, signal.SIGSTOP)
    try:
        with client.Client(daemon.sock) as c, pytest.raises(DaemonUnavailable) as exc:
            c.call("query", {"q": "coffee"})
        assert "did not answer 'query'" in exc.value.message and "SIGSTOP" in exc.value.message
        rc = main(["status", "--vault", str(daemon.vault), "--socket", str(daemon.sock)])
        assert rc == 2 and "did not answer" in capsys.readouterr().err
    finally:
        os.kill(daemon.proc.pid, signal.SIGCONT)
    assert daemon.result("status")["state"] == "ready"


def test_sighup_stops_cleanly_like_sigterm(daemon: DaemonProc) -> None:
    """Closing the terminal that ran `serve` killed the daemon without its cleanup."""
    daemon.proc.send_signal(signal.SIGHUP)
    assert daemon.proc.wait(10) == 0
    assert not daemon.sock.exists()
    assert not lock_path(load_config(daemon.vault)).exists()


def test_a_deleted_socket_file_is_made_again(daemon: DaemonProc) -> None:
    """The daemon, holding the lock, was out of reach: `stop` said no daemon runs while a
    second `serve` was refused as one runs."""
    daemon.sock.unlink()
    eventually(daemon.sock.exists, "the socket is made again")
    assert stat.S_IMODE(daemon.sock.lstat().st_mode) == 0o600
    assert daemon.result("status")["state"] == "ready"
    stop = wikimem("stop", "--vault", str(daemon.vault), "--socket", str(daemon.sock))
    assert stop.returncode == 0, stop.stderr
    assert daemon.proc.wait(10) == 0


def test_a_deleted_cache_dir_comes_back_with_the_socket(
    vault: Path, start_daemon: Callable[..., DaemonProc]
) -> None:
    sock = default_socket_path(load_config(vault))
    daemon = start_daemon(vault, sock=sock)
    shutil.rmtree(vault / ".wikimem")
    eventually(sock.exists, "the socket is made again in a new cache dir")
    assert stat.S_IMODE((vault / ".wikimem").stat().st_mode) == 0o700
    assert (vault / ".wikimem" / ".gitignore").read_text() == "*\n"
    status = wikimem("status", "--vault", str(vault), "--json")
    assert status.returncode == 0 and json.loads(status.stdout)["pid"] == daemon.proc.pid


@pytest.mark.parametrize("how", ["deleted", "moved"])
def test_a_vault_folder_that_goes_away_stops_its_daemon(
    vault: Path, start_daemon: Callable[..., DaemonProc], how: str
) -> None:
    """The daemon went on serving a vault that was not there and held its lock, so after
    `rm -rf vault && git clone ... vault` a `serve` was refused and `stop` found nothing."""
    daemon = start_daemon(vault)
    if how == "deleted":
        shutil.rmtree(vault)
    else:
        vault.rename(vault.with_name("elsewhere"))
    assert daemon.proc.wait(15) == 2
    assert "deleted or moved away" in daemon.output()
    assert "file watcher" not in daemon.output()  # not taken for a watcher that stopped
    (vault / "diary").mkdir(parents=True)
    again = start_daemon(vault)
    assert again.result("status")["state"] == "ready"
