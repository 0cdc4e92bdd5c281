"""The socket client: brief retries while a daemon is busy or starting, never otherwise;
the vault's daemon found on its default socket, else through its lock."""

from __future__ import annotations

import os
import shutil
import socket
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from wikimem_watch.daemon.runtime import (
    DaemonLock,
    LockInfo,
    default_socket_path,
    host_tag,
    lock_path,
)
from wikimem_watch.errors import DaemonUnavailable
from wikimem_watch.settings import VaultLocation
from wikimem_watch.shells.client import CONNECT_RETRY_S, Client, connect, open_socket


@pytest.fixture
def sock_path() -> Iterator[Path]:
    path = Path(tempfile.gettempdir()) / f"wmw-c-{uuid.uuid4().hex[:8]}.sock"
    yield path
    path.unlink(missing_ok=True)


def fill_backlog(path: Path) -> tuple[socket.socket, list[socket.socket]]:
    """A listener that accepts nobody, with its backlog full: connects now get EAGAIN."""
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(path))
    listener.listen(1)
    queued: list[socket.socket] = []
    while True:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.setblocking(False)
        try:
            s.connect(str(path))
        except BlockingIOError:
            s.close()
            return listener, queued
        queued.append(s)


def test_a_full_backlog_is_retried_until_the_daemon_accepts(sock_path: Path) -> None:
    listener, queued = fill_backlog(sock_path)
    accepted: list[socket.socket] = []

    def accept_later() -> None:
        time.sleep(0.2)  # not a measurement: only lets the client hit EAGAIN first
        for _ in range(len(queued) + 1):
            accepted.append(listener.accept()[0])

    thread = threading.Thread(target=accept_later)
    thread.start()
    try:
        sock = open_socket(sock_path, 5.0, retry_s=5.0)
        sock.close()
    finally:
        thread.join(5)
        for s in [listener, *queued, *accepted]:
            s.close()


def test_a_full_backlog_gives_up_with_a_clear_message(sock_path: Path) -> None:
    listener, queued = fill_backlog(sock_path)
    try:
        with pytest.raises(DaemonUnavailable, match="too busy"):
            open_socket(sock_path, 1.0, retry_s=0.05)
    finally:
        for s in [listener, *queued]:
            s.close()


def test_no_daemon_fails_at_once_unless_one_is_starting(
    sock_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with monkeypatch.context() as m:

        def no_retry(_: float) -> None:
            raise AssertionError("retried although no daemon is starting")

        m.setattr("wikimem_watch.shells.client.time.sleep", no_retry)
        with pytest.raises(DaemonUnavailable, match="no daemon is listening"):
            Client(sock_path, retry_s=30.0)

    def listen_later() -> None:
        time.sleep(0.2)
        listener.bind(str(sock_path))
        listener.listen(1)

    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    thread = threading.Thread(target=listen_later)
    thread.start()
    try:
        open_socket(sock_path, 5.0, retry_s=5.0, starting=True).close()
    finally:
        thread.join(5)
        listener.close()


# ------------------------------------------------------------ finding a vault's daemon


@pytest.fixture
def place(monkeypatch: pytest.MonkeyPatch) -> Iterator[VaultLocation]:
    """A vault with a short path (AF_UNIX limits socket paths) and a private runtime dir."""
    root = Path(tempfile.mkdtemp(prefix="wmw-c-")).resolve()
    (root / "run").mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(root / "run"))
    vault = root / "vault"
    (vault / ".wikimem").mkdir(parents=True)
    yield VaultLocation(vault, None, None)
    shutil.rmtree(root)


def listening(path: Path) -> socket.socket:
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(path))
    listener.listen(4)
    return listener


def test_a_daemon_on_the_default_socket_is_reached_without_reading_the_lock(
    place: VaultLocation, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_lock(_: Path) -> None:
        raise AssertionError("read the lock although the default socket answered")

    monkeypatch.setattr("wikimem_watch.shells.client.read_live_lock", no_lock)
    with listening(default_socket_path(place)), connect(place) as client:
        assert client.path == default_socket_path(place)
        assert client.retry_s == CONNECT_RETRY_S  # a later reopen still waits for a busy daemon


@pytest.mark.parametrize("stale_default", [False, True])
def test_a_daemon_on_a_custom_socket_is_found_through_its_lock(
    place: VaultLocation, sock_path: Path, stale_default: bool
) -> None:
    if stale_default:  # a socket file left by a daemon that died: nobody listens there
        listening(default_socket_path(place)).close()
    info = LockInfo(os.getpid(), str(sock_path), host_tag(), str(place.vault), 1.0)
    lock = DaemonLock.acquire(lock_path(place), info)
    try:
        with listening(sock_path), connect(place) as client:
            assert client.path == sock_path
    finally:
        lock.release()


def test_with_no_daemon_and_no_lock_connecting_fails_at_once(
    place: VaultLocation, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_retry(_: float) -> None:
        raise AssertionError("retried although no daemon is starting")

    monkeypatch.setattr("wikimem_watch.shells.client.time.sleep", no_retry)
    with pytest.raises(DaemonUnavailable, match="no daemon is listening"):
        connect(place)
