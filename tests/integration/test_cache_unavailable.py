"""A cache directory that cannot be used never stops the daemon: it serves BM25 without
caches and says why; only a socket it cannot create is fatal (exit 2, naming the path)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from daemon_harness import child_env, eventually, short_socket_path, wikimem

pytestmark = pytest.mark.timeout(60)


def serve(vault: Path, *extra: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "wikimem_watch", "serve", str(vault), *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=child_env(),
    )


def stop(proc: subprocess.Popen[bytes]) -> str:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
    _, err = proc.communicate()
    return err.decode(errors="replace")


def status_of(vault: Path) -> dict[str, object] | None:
    out = wikimem("status", "--vault", str(vault), "--json", timeout=20)
    return json.loads(out.stdout) if out.returncode == 0 else None


def ready(vault: Path) -> bool:
    status = status_of(vault)
    return status is not None and status["state"] == "ready"


def test_a_cache_dir_that_cannot_be_created_serves_bm25_without_caches(vault: Path) -> None:
    (vault / ".wikimem").write_text("a file where the cache directory belongs\n")
    proc = serve(vault, "--embed", "hash")  # no --socket: the default lives in the cache dir
    try:
        eventually(lambda: proc.poll() is not None or ready(vault), "serving", deadline_s=30)
        assert proc.poll() is None, "the daemon must keep serving"
        status = status_of(vault)
        assert status is not None
        cache = status["cache"]
        assert isinstance(cache, dict) and cache["usable"] is False
        assert ".wikimem" in str(cache["problem"]) and status["vectors"] == {"state": "off"}
        out = wikimem("query", "--vault", str(vault), "--json", "sailing")
        assert out.returncode == 0 and json.loads(out.stdout)["hits"]
        assert "no daemon running" not in out.stderr, "answered by the daemon"
    finally:
        err = stop(proc)
    assert "serving without caches" in err and "Traceback" not in err


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into a 0500 directory anyway")
def test_a_read_only_cache_dir_serves_without_caches(vault: Path) -> None:
    (vault / ".wikimem").mkdir(mode=0o500)
    proc = serve(vault)
    try:
        eventually(lambda: proc.poll() is not None or ready(vault), "serving", deadline_s=30)
        assert proc.poll() is None
    finally:
        err = stop(proc)
        (vault / ".wikimem").chmod(0o700)
    assert "serving without caches" in err and "Traceback" not in err


def refused(vault: Path, sock: Path) -> str:
    """``serve --socket SOCK`` exits 2; its stderr."""
    proc = serve(vault, "--socket", str(sock))
    try:
        proc.wait(30)
    finally:
        err = stop(proc)
    assert proc.returncode == 2, err
    return err


def test_a_socket_that_cannot_be_created_exits_2_naming_it(vault: Path, tmp_path: Path) -> None:
    (tmp_path / "blocker").write_text("x")
    sock = tmp_path / "blocker" / "d.sock"  # its "directory" is a file
    err = refused(vault, sock)
    assert str(sock) in err and "--socket" in err and "Traceback" not in err


def test_a_socket_under_a_missing_chain_of_folders_is_refused_not_created(
    vault: Path, tmp_path: Path
) -> None:
    sock = tmp_path / "typo" / "run" / "d.sock"  # one missing folder is made; two are a typo
    err = refused(vault, sock)
    assert str(tmp_path / "typo") in err and "does not exist" in err and "Traceback" not in err
    assert not (tmp_path / "typo").exists()


def test_a_symlinked_cache_dir_in_the_vault_is_not_written_through(
    vault: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir(mode=0o755)
    (vault / ".wikimem").symlink_to(outside)
    sock = short_socket_path()
    proc = serve(vault, "--socket", str(sock), "--embed", "hash")
    try:
        eventually(lambda: proc.poll() is not None or sock.exists(), "listening", deadline_s=30)
        out = wikimem("status", "--socket", str(sock), "--json")
        assert out.returncode == 0, out.stderr
        assert json.loads(out.stdout)["cache"]["usable"] is False
        time.sleep(0.2)  # not a measurement: give a wrong write a chance to show
        assert list(outside.iterdir()) == [], "nothing written outside the vault"
        assert oct(outside.stat().st_mode & 0o777) == oct(0o755), "no chmod through the link"
    finally:
        stop(proc)
        sock.unlink(missing_ok=True)
