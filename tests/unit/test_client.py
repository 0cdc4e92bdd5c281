"""The socket client: brief retries while a daemon is busy or starting, never otherwise."""

from __future__ import annotations

import socket
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from wikimem_watch.errors import DaemonUnavailable
from wikimem_watch.shells.client import Client, open_socket


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
