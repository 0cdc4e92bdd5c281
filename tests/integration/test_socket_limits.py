"""The socket's limits through the real daemon: idle timeouts, bounded connections that never
lock a client out, bursts of connects, bounded buffering, and hostile JSON (ADR-0010)."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Callable
from pathlib import Path

import pytest
from daemon_harness import DaemonProc, Rpc, eventually

from wikimem_watch.shells.client import Client, RemoteError

pytestmark = pytest.mark.timeout(60)


def raw_connect(path: Path) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(20)
    sock.connect(str(path))
    return sock


def closed_by_daemon(sock: socket.socket) -> Callable[[], bool]:
    """True once the daemon has closed ``sock`` (EOF, possibly after one notice line)."""

    def check() -> bool:
        sock.settimeout(0.05)
        try:
            data = sock.recv(65536)
        except TimeoutError:
            return False
        except OSError:
            return True
        return data == b"" or data.endswith(b"\n")

    return check


def test_a_silent_connection_is_closed_after_the_idle_timeout(
    vault: Path, start_daemon: Callable[..., DaemonProc]
) -> None:
    daemon = start_daemon(vault, "--idle-timeout-s", "0.3")
    silent = raw_connect(daemon.sock)
    partial = raw_connect(daemon.sock)
    partial.sendall(b'{"jsonrpc": "2.0", "method": "sta')  # a trickle never finishes a line
    try:
        eventually(closed_by_daemon(silent), "silent connection closed")
        eventually(closed_by_daemon(partial), "half-line connection closed")
        assert daemon.result("hello")["name"] == "wikimem-watch"
    finally:
        silent.close()
        partial.close()


def test_the_python_client_reopens_a_connection_the_daemon_closed_while_idle(
    vault: Path, start_daemon: Callable[..., DaemonProc]
) -> None:
    daemon = start_daemon(vault, "--idle-timeout-s", "0.3")
    with Client(daemon.sock) as client:
        assert client.call("hello")
        eventually(lambda: daemon.result("status")["connections"] == 1, "idle client dropped")
        assert client.call("hello"), "the request after an idle close still works"
        assert client.reconnects == 1


def test_the_python_client_reports_the_size_limit_not_a_broken_pipe(
    daemon: DaemonProc,
) -> None:
    with Client(daemon.sock) as client:
        with pytest.raises(RemoteError, match="max_request_bytes") as caught:
            client.call("query", {"q": "a " * 1_000_000})  # 2 MB, over the 1 MiB limit
        assert caught.value.code == -32600
        assert client.call("hello"), "the next request reconnects"


def test_silent_sockets_at_max_connections_never_lock_a_client_out(
    vault: Path, start_daemon: Callable[..., DaemonProc]
) -> None:
    daemon = start_daemon(vault)  # the default limits: 256 connections, 60 s idle
    silent = [raw_connect(daemon.sock) for _ in range(256)]
    try:
        for _ in range(3):  # each newcomer evicts the longest-idle silent socket
            assert daemon.result("query", {"q": "sailing"})["hits"]
            silent.append(raw_connect(daemon.sock))
        limits = daemon.result("status")["socket_limits"]
        assert limits["evicted_idle"] >= 3 and limits["open"] <= 256
        assert closed_by_daemon(silent[0])(), "the oldest idle connection went first"
    finally:
        for sock in silent:
            sock.close()


def test_a_burst_of_200_clients_is_served_without_eagain(daemon: DaemonProc) -> None:
    errors: list[str] = []
    ok: list[int] = []
    barrier = threading.Barrier(200)

    def one() -> None:
        try:
            barrier.wait()
            with Client(daemon.sock, timeout_s=30) as client:
                client.call("hello")
            ok.append(1)
        except Exception as exc:  # collected and asserted below: the failures are the point
            errors.append(repr(exc))

    threads = [threading.Thread(target=one) for _ in range(200)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert not errors, errors[:3]
    assert len(ok) == 200


def test_partial_lines_are_bounded_across_connections(
    vault: Path, start_daemon: Callable[..., DaemonProc]
) -> None:
    daemon = start_daemon(
        vault, "--max-request-bytes", "1000000", "--max-buffered-bytes", "3000000"
    )
    holders = [raw_connect(daemon.sock) for _ in range(8)]
    refused = 0
    try:
        for sock in holders:
            try:
                sock.sendall(b'{"q": "' + b"x" * 900_000)  # a line that never ends
            except OSError:
                refused += 1
        eventually(
            lambda: daemon.result("status")["socket_limits"]["open"] <= 4,
            "connections over the byte budget are closed",
        )
        limits = daemon.result("status")["socket_limits"]
        assert limits["buffered_bytes"] <= 3_000_000
        notices = [s for s in holders if closed_by_daemon(s)()]
        assert len(notices) >= 4
        assert daemon.result("query", {"q": "sailing"})["hits"], "others are still served"
    finally:
        for sock in holders:
            sock.close()


def test_deeply_nested_json_is_a_parse_error_and_the_connection_lives(
    daemon: DaemonProc,
) -> None:
    rpc = daemon.rpc()
    try:
        for raw in (b"[" * 100_000, b'{"a":' * 50_000, b"[" * 33 + b"]" * 33):
            reply = rpc.send_raw(raw + b"\n")
            assert reply is not None, "the connection thread died without a reply"
            assert reply["error"]["code"] == -32700 and reply["id"] is None
        assert rpc.result("hello")["name"] == "wikimem-watch"
    finally:
        rpc.close()


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ('{"q": "ann", "half_life_days": NaN}', "half_life_days"),
        ('{"q": "ann", "half_life_days": Infinity}', "half_life_days"),
        ('{"q": "ann", "half_life_days": 1e999}', "half_life_days"),
        ('{"q": "ann", "weights": {"recency": NaN}}', "weights.recency"),
        ('{"q": "ann", "weights": {"vector": -Infinity}}', "weights.vector"),
        ('{"q": "ann", "weights": {"bm25": Infinity}}', "weights.bm25"),
        ('{"q": "ann", "k": 1e300}', "k"),
        ('{"q": "ann", "budget_tokens": 100000000000000000000}', "budget_tokens"),
    ],
)
def test_non_finite_or_huge_numbers_are_invalid_params(
    daemon: DaemonProc, params: str, field: str
) -> None:
    rpc = Rpc(daemon.sock)
    try:
        line = '{"jsonrpc": "2.0", "id": 1, "method": "query", "params": ' + params + "}\n"
        reply = rpc.send_raw(line.encode())
        assert reply is not None
        assert reply["error"]["code"] == -32602, reply
        assert reply["error"]["message"].startswith(field), reply
        json.dumps(reply, allow_nan=False)  # the reply itself is strict JSON
        assert rpc.result("hello")
    finally:
        rpc.close()


def test_a_connection_that_unsubscribed_is_closed_after_the_idle_timeout_again(
    vault: Path, start_daemon: Callable[..., DaemonProc]
) -> None:
    """Subscribing exempts a connection from the idle timeout (and from eviction); once its
    last subscription is gone it was kept exempt for good, outside the max_subscribed cap."""
    daemon = start_daemon(vault, "--idle-timeout-s", "0.3")
    rpc = Rpc(daemon.sock)
    try:
        sub_id = rpc.result("subscribe", {})["subscription"]
        assert rpc.result("unsubscribe", {"subscription": sub_id}) == {"unsubscribed": True}
        eventually(closed_by_daemon(rpc.sock), "the unsubscribed connection closed when idle")
    finally:
        rpc.close()
