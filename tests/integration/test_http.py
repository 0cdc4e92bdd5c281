"""The HTTP + JSON endpoint of a real daemon (`serve --http 127.0.0.1:0`): a bearer token,
loopback Host names only, body limits, and the same answers as the socket (ADR-0013)."""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import signal
import socket
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from daemon_harness import DaemonProc

from wikimem_watch.daemon.http import parse_address
from wikimem_watch.errors import ConfigError


class Http:
    """A tiny client for the daemon's endpoint, raw enough to send wrong headers."""

    def __init__(self, daemon: DaemonProc) -> None:
        self.daemon = daemon
        info = daemon.result("status")["http"]
        assert info is not None, "status names the HTTP endpoint"
        self.host, _, port = info["url"].removeprefix("http://").rpartition(":")
        self.port = int(port)
        self.token = Path(info["token_file"]).read_text(encoding="ascii").strip()
        assert oct(Path(info["token_file"]).stat().st_mode & 0o777) == "0o600"

    def request(
        self,
        method: str,
        path: str,
        body: bytes | None = None,
        *,
        token: str | None = "",
        host: str | None = None,
    ) -> tuple[int, Any]:
        conn = http.client.HTTPConnection(self.host, self.port, timeout=10)
        headers = {"Host": host or f"127.0.0.1:{self.port}"}
        if token is not None:
            headers["Authorization"] = f"Bearer {token or self.token}"
        if body is not None:
            headers["Content-Type"] = "application/json"
        try:
            conn.request(method, path, body=body, headers=headers)
            resp = conn.getresponse()
            data = resp.read()
        finally:
            conn.close()
        return resp.status, json.loads(data) if data else None


@pytest.fixture
def web(vault: Path, start_daemon: Callable[..., DaemonProc]) -> Http:
    return Http(start_daemon(vault, "--http", "127.0.0.1:0"))


def test_a_request_without_the_right_token_is_refused(web: Http) -> None:
    status, body = web.request("GET", "/v1/status", token=None)
    assert status == 401 and "bearer token" in body["error"]["message"]
    assert web.request("GET", "/v1/status", token="not-the-token")[0] == 401


def test_every_answer_names_the_server_without_its_python_version(web: Http) -> None:
    for token in (None, web.token):  # a refusal and a served answer
        conn = http.client.HTTPConnection(web.host, web.port, timeout=10)
        headers = {"Host": f"127.0.0.1:{web.port}"}
        if token is not None:
            headers["Authorization"] = f"Bearer {token}"
        try:
            conn.request("GET", "/v1/status", headers=headers)
            resp = conn.getresponse()
            resp.read()
        finally:
            conn.close()
        assert resp.status == (401 if token is None else 200)
        assert resp.getheader("Server") == "wikimem-watch"


def test_a_foreign_host_header_is_refused(web: Http) -> None:
    status, body = web.request("GET", "/v1/status", host="evil.example:80")
    assert status == 403 and "Host" in body["error"]["message"]
    assert web.request("GET", "/v1/status", host=f"localhost:{web.port}")[0] == 200


def test_a_refused_host_is_named_and_a_missing_one_is_said_to_be_missing(web: Http) -> None:
    assert (
        "'evil.example:80'"
        in web.request("GET", "/", host="evil.example:80")[1]["error"]["message"]
    )
    head = f"GET /v1/status HTTP/1.0\r\nAuthorization: Bearer {web.token}\r\n\r\n"
    with socket.create_connection((web.host, web.port), timeout=10) as sock:
        sock.sendall(head.encode())
        reply = sock.makefile("rb").read()
    assert reply.startswith(b"HTTP/1.1 403"), reply[:60]
    assert "no Host header" in json.loads(reply.partition(b"\r\n\r\n")[2])["error"]["message"]


def test_quick_endpoints_answer_like_the_socket(web: Http) -> None:
    status, result = web.request("GET", "/v1/query?q=sailing&k=3")
    assert status == 200 and result["hits"][0]["path"] == "wiki/people.md"
    status, days = web.request("GET", "/v1/days")
    assert status == 200 and days["days"] == [{"date": "2026-07-20", "entries": 1}]
    status, day = web.request("GET", "/v1/day/2026-07-20")
    assert status == 200 and "harbour" in day["entries"][0]["text"]
    assert web.request("GET", "/v1/status")[1]["state"] == "ready"


def test_query_parameters_that_are_numbers_or_booleans_are_read_from_the_url(web: Http) -> None:
    url = "/v1/query?q=sailing&k=1&explain=true&expand_links=false&budget_tokens=500"
    status, result = web.request("GET", url + "&half_life_days=3.5")
    assert status == 200 and "explain" in result["hits"][0]
    status, result = web.request("GET", "/v1/query?q=sailing&explain=0")
    assert status == 200 and "explain" not in result["hits"][0]
    status, body = web.request("GET", "/v1/query?q=sailing&explain=maybe")
    assert status == 400 and "explain" in body["error"]["message"]
    status, body = web.request("GET", "/v1/query?q=sailing&half_life_days=soon")
    assert status == 400 and "half_life_days" in body["error"]["message"]


def test_parse_time_in_the_url_is_a_boolean_like_the_others(web: Http) -> None:
    url = "/v1/query?q=coffee+yesterday&now=2026-07-21T09:00"
    status, result = web.request("GET", url)
    assert status == 200 and result["time_range"]["start"] == "2026-07-20"
    for off in ("false", "0"):
        status, result = web.request("GET", f"{url}&parse_time={off}")
        assert status == 200, result
        assert result["time_range"] is None and "yesterday" in result["query_terms"]


def test_a_get_of_rpc_says_it_takes_a_post_not_that_there_is_no_such_endpoint(web: Http) -> None:
    status, body = web.request("GET", "/rpc")
    assert status == 404 and "takes a POST" in body["error"]["message"], body


def test_rpc_takes_the_socket_s_json_rpc_objects(web: Http) -> None:
    req = {"jsonrpc": "2.0", "id": 7, "method": "query", "params": {"q": "coffee", "k": 1}}
    status, reply = web.request("POST", "/rpc", json.dumps(req).encode())
    assert status == 200 and reply["id"] == 7
    assert "coffee" in reply["result"]["hits"][0]["text"].lower()
    bad = {"jsonrpc": "2.0", "id": 8, "method": "query", "params": {"q": "x", "k": 0}}
    status, reply = web.request("POST", "/rpc", json.dumps(bad).encode())
    assert status == 200 and reply["error"]["code"] == -32602
    sub = {"jsonrpc": "2.0", "id": 9, "method": "subscribe", "params": {}}
    status, reply = web.request("POST", "/rpc", json.dumps(sub).encode())
    assert status == 200 and "GET /v1/changes" in reply["error"]["message"]


def test_bad_requests_get_clear_statuses(web: Http) -> None:
    assert web.request("GET", "/v1/query?q=x&k=zero")[0] == 400
    assert web.request("GET", "/v1/nothing-here")[0] == 404
    status, body = web.request("GET", "/v1/day/2026-13-40")
    assert status == 400 and "date" in body["error"]["message"]
    big = (
        b'{"jsonrpc": "2.0", "id": 1, "method": "hello", "params": {"pad": "'
        + b"x" * (1024 * 1024 + 10)
        + b'"}}'
    )
    assert web.request("POST", "/rpc", big)[0] == 413


def test_a_client_still_sending_a_refused_body_reads_the_413(web: Http) -> None:
    body = b"x" * (12 * 1024 * 1024)
    head = (
        f"POST /rpc HTTP/1.1\r\nHost: 127.0.0.1:{web.port}\r\n"
        f"Authorization: Bearer {web.token}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode()
    with socket.create_connection((web.host, web.port), timeout=10) as sock:
        sock.sendall(head + body)  # a server that closes without reading resets this
        reply = sock.makefile("rb").read()
    assert reply.startswith(b"HTTP/1.0 413") or reply.startswith(b"HTTP/1.1 413")


def _raw(web: Http, request_line: bytes) -> tuple[bytes, Any]:
    head = (
        request_line
        + (
            f"\r\nHost: 127.0.0.1:{web.port}\r\nAuthorization: Bearer {web.token}\r\n"
            "Connection: close\r\n\r\n"
        ).encode()
    )
    with socket.create_connection((web.host, web.port), timeout=10) as sock:
        sock.sendall(head)
        reply = sock.makefile("rb").read()
    status_line, _, rest = reply.partition(b"\r\n")
    body = rest.partition(b"\r\n\r\n")[2]
    return status_line, json.loads(body)


def test_an_unescaped_utf8_query_is_read_as_utf8(web: Http, vault: Path) -> None:
    (vault / "diary" / "2026-07-21.md").write_text("## 09:00\n在港口吃了火锅。\n", "utf-8")
    deadline = time.monotonic() + 10
    while not web.request("GET", "/v1/query?q=%E7%81%AB%E9%94%85")[1]["hits"]:
        assert time.monotonic() < deadline, "the new entry never became searchable"
        time.sleep(0.05)
    status, body = _raw(web, "GET /v1/query?q=火锅 HTTP/1.1".encode())
    assert b" 200 " in status
    assert [h["id"] for h in body["hits"]] == ["diary/2026-07-21.md#09:00"]


def test_a_malformed_request_line_gets_a_json_error_not_html(web: Http) -> None:
    status, body = _raw(web, b"GET /v1/query?q=two words HTTP/1.1")
    assert b" 400 " in status
    assert isinstance(body["error"]["message"], str) and body["error"]["message"]


def test_the_daemon_still_serves_its_socket_beside_http(
    vault: Path, start_daemon: Callable[..., DaemonProc]
) -> None:
    daemon = start_daemon(vault, "--http", "127.0.0.1:0")
    assert daemon.result("query", {"q": "sailing"})["hits"]
    assert Http(daemon).request("GET", "/v1/query?q=sailing")[0] == 200


def test_a_non_loopback_address_needs_an_explicit_allow() -> None:
    assert parse_address("127.0.0.1:8765", allow_remote=False) == ("127.0.0.1", 8765)
    assert parse_address("[::1]:0", allow_remote=False) == ("::1", 0)
    with pytest.raises(ConfigError, match="not a loopback address"):
        parse_address("0.0.0.0:8765", allow_remote=False)
    with pytest.raises(ConfigError, match="HOST:PORT"):
        parse_address("8765", allow_remote=False)
    assert parse_address("0.0.0.0:8765", allow_remote=True) == ("0.0.0.0", 8765)


def test_changes_stream_as_server_sent_events(web: Http, vault: Path) -> None:
    conn = http.client.HTTPConnection(web.host, web.port, timeout=20)
    headers = {"Host": f"127.0.0.1:{web.port}", "Authorization": f"Bearer {web.token}"}
    conn.request("GET", "/v1/changes?kinds=diary", headers=headers)
    resp = conn.getresponse()
    assert resp.status == 200 and resp.getheader("Content-Type", "").startswith("text/event-stream")

    def next_event() -> tuple[str, Any]:
        name, data = "", ""
        while True:
            line = resp.readline().decode().rstrip("\n")
            if line.startswith("event: "):
                name = line[7:]
            elif line.startswith("data: "):
                data = line[6:]
            elif not line and name:
                return name, json.loads(data)

    try:
        name, data = next_event()
        assert name == "subscribed" and data["subscription"]
        (vault / "diary" / "2026-07-21.md").write_text("## 09:00\nA new day.\n", encoding="utf-8")
        name, data = next_event()
        assert name == "changed" and data["params"]["added"] == ["diary/2026-07-21.md#09:00"]
    finally:
        conn.close()


def test_a_write_through_rpc_is_searchable_when_it_returns(web: Http) -> None:
    params = {"text": "ferry to the island", "date": "2026-07-20", "time": "11:00"}
    req = {"jsonrpc": "2.0", "id": 3, "method": "append_diary", "params": params}
    status, reply = web.request("POST", "/rpc", json.dumps(req).encode())
    assert status == 200 and reply["result"]["id"] == "diary/2026-07-20.md#11:00"
    status, result = web.request("GET", "/v1/query?q=ferry&k=1")
    assert status == 200 and result["hits"][0]["id"] == "diary/2026-07-20.md#11:00"


@pytest.mark.timeout(60)
def test_idle_connections_are_capped_and_closed(
    vault: Path, start_daemon: Callable[..., DaemonProc]
) -> None:
    daemon = start_daemon(
        vault, "--http", "127.0.0.1:0", "--max-connections", "4", "--idle-timeout-s", "1"
    )
    web = Http(daemon)
    idle = [socket.create_connection((web.host, web.port), timeout=10) for _ in range(4)]
    try:
        extra = socket.create_connection((web.host, web.port), timeout=10)
        with extra:
            reply = extra.recv(65536).decode()
        assert reply.startswith("HTTP/1.1 503") and "max_connections" in reply
        for sock in idle:  # no request within idle_timeout_s: closed by the daemon
            assert sock.recv(1) == b""
        assert web.request("GET", "/v1/status")[0] == 200  # room again
    finally:
        for sock in idle:
            sock.close()


def test_a_refused_shutdown_stops_nothing(web: Http) -> None:
    body = b'{"jsonrpc": "2.0", "id": 1, "method": "shutdown", "params": {"bogus": 1}}'
    status, reply = web.request("POST", "/rpc", body)
    assert status == 200 and reply["error"]["code"] == -32602
    time.sleep(0.5)  # a stop would have begun by now
    assert web.daemon.proc.poll() is None
    assert web.request("GET", "/v1/status")[0] == 200


def test_the_body_of_a_refused_request_is_never_read_as_the_next_one(web: Http) -> None:
    inner = (
        f"GET /v1/status HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer {web.token}\r\n\r\n"
    ).encode()
    outer = (
        f"POST /nope HTTP/1.1\r\nHost: 127.0.0.1:{web.port}\r\nAuthorization: Bearer {web.token}"
        f"\r\nContent-Length: {len(inner)}\r\n\r\n"
    ).encode()
    with socket.create_connection((web.host, web.port), timeout=10) as sock:
        sock.sendall(outer + inner)
        replies = sock.makefile("rb").read()
    assert replies.startswith(b"HTTP/1.1 404") and replies.count(b"HTTP/1.1 ") == 1


def test_a_refused_event_stream_is_an_error_answer_not_a_stream(web: Http) -> None:
    status, body = web.request("GET", "/v1/changes?q=the")
    assert status == 400 and "no searchable words" in body["error"]["message"]


def test_bound_to_every_address_a_host_given_as_an_ip_is_this_machine(
    vault: Path, start_daemon: Callable[..., DaemonProc]
) -> None:
    daemon = start_daemon(vault, "--http", "0.0.0.0:0", "--http-allow-remote")
    web = Http(daemon)
    web.host = "127.0.0.1"
    assert web.request("GET", "/v1/status", host=f"192.0.2.2:{web.port}")[0] == 200
    assert web.request("GET", "/v1/status", host=f"evil.example:{web.port}")[0] == 403


def _closed_within(sock: socket.socket, seconds: float, trickle: bytes) -> bool:
    """Send ``trickle`` every 0.2 s (never finishing a request) until the daemon closes the
    connection (True) or ``seconds`` pass (False)."""
    deadline = time.monotonic() + seconds
    sock.settimeout(0.2)
    while time.monotonic() < deadline:
        try:
            sock.sendall(trickle)
            if sock.recv(65536) == b"":
                return True
        except TimeoutError:
            continue
        except OSError:
            return True
    return False


@pytest.mark.timeout(60)
def test_a_request_trickled_a_line_at_a_time_is_closed_after_the_idle_timeout(
    vault: Path, start_daemon: Callable[..., DaemonProc]
) -> None:
    web = Http(start_daemon(vault, "--http", "127.0.0.1:0", "--idle-timeout-s", "1"))
    with socket.create_connection((web.host, web.port), timeout=10) as sock:
        sock.sendall(b"GET /v1/status HTTP/1.1\r\n")
        # Each line arrives well within the timeout; the request never completes.
        assert _closed_within(sock, 6, b"X-Slow: 1\r\n"), "a trickled request held its slot"
    with socket.create_connection((web.host, web.port), timeout=10) as sock:
        head = f"POST /rpc HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {web.token}\r\n"
        sock.sendall(head.encode() + b"Content-Length: 100000\r\n\r\n")
        assert _closed_within(sock, 6, b" "), "a trickled body held its slot"
    assert web.request("GET", "/v1/status")[0] == 200


@pytest.mark.timeout(60)
def test_a_body_shorter_than_its_content_length_gets_an_answer_not_a_dropped_connection(
    vault: Path, start_daemon: Callable[..., DaemonProc]
) -> None:
    web = Http(start_daemon(vault, "--http", "127.0.0.1:0", "--idle-timeout-s", "1"))
    head = (
        f"POST /rpc HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {web.token}\r\n"
        "Content-Length: 100\r\n\r\n"
    )
    for ends in (False, True):  # the client goes quiet, or closes its side
        with socket.create_connection((web.host, web.port), timeout=10) as sock:
            sock.sendall(head.encode() + b'{"jsonrpc": "2.0"')
            if ends:
                sock.shutdown(socket.SHUT_WR)
            reply = sock.makefile("rb").read()
        status = b"HTTP/1.1 400" if ends else b"HTTP/1.1 408"
        assert reply.startswith(status), reply[:60]
        message = json.loads(reply.partition(b"\r\n\r\n")[2])["error"]["message"]
        assert "100 bytes" in message


def test_request_headers_are_bounded_before_they_are_parsed(web: Http) -> None:
    pad = "".join(f"X-Pad-{i}: {'a' * 60000}\r\n" for i in range(4))  # 240 KB of headers
    head = (
        f"GET /v1/status HTTP/1.1\r\nHost: 127.0.0.1:{web.port}\r\n"
        f"Authorization: Bearer {web.token}\r\n{pad}Connection: close\r\n\r\n"
    )
    with socket.create_connection((web.host, web.port), timeout=10) as sock:
        sock.sendall(head.encode())
        reply = sock.makefile("rb").read()
    assert reply.startswith(b"HTTP/1.1 431"), reply[:60]
    assert "64 KiB" in json.loads(reply.partition(b"\r\n\r\n")[2])["error"]["message"]


def test_a_body_the_endpoint_does_not_read_is_never_read_as_the_next_request(web: Http) -> None:
    inner = (
        f"GET /v1/status HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer {web.token}\r\n\r\n"
    )
    hello = '{"jsonrpc": "2.0", "id": 1, "method": "hello"}'
    auth = f"Host: 127.0.0.1:{web.port}\r\nAuthorization: Bearer {web.token}\r\n"
    framed = {  # each carries `inner` where a server reading it another way finds a request
        "a GET with a body": f"GET /v1/days HTTP/1.1\r\n{auth}Content-Length: {len(inner)}",
        "a preflight with a body": f"OPTIONS /rpc HTTP/1.1\r\nHost: localhost\r\n"
        f"Origin: https://a.example\r\nContent-Length: {len(inner)}",
        "Content-Length and Transfer-Encoding": f"POST /rpc HTTP/1.1\r\n{auth}"
        f"Content-Length: {len(hello)}\r\nTransfer-Encoding: chunked",
        "two Content-Lengths": f"POST /rpc HTTP/1.1\r\n{auth}Content-Length: {len(hello)}\r\n"
        f"Content-Length: {len(hello) + len(inner)}",
    }
    for name, head in framed.items():
        body = hello + inner if head.startswith("POST") else inner
        replies = b""
        with socket.create_connection((web.host, web.port), timeout=2) as sock:
            sock.sendall(f"{head}\r\n\r\n{body}".encode())
            with contextlib.suppress(TimeoutError):  # a kept-alive connection stays open
                while chunk := sock.recv(65536):
                    replies += chunk
        assert replies.count(b"HTTP/1.1 ") == 1, name
        if head.startswith("POST"):
            assert replies.startswith(b"HTTP/1.1 411"), name


def test_a_content_length_of_thousands_of_digits_is_a_413(web: Http) -> None:
    head = (
        f"POST /rpc HTTP/1.1\r\nHost: 127.0.0.1:{web.port}\r\nAuthorization: Bearer {web.token}"
        f"\r\nContent-Length: {'9' * 5000}\r\n\r\n"  # int() refuses over 4,300 digits
    )
    with socket.create_connection((web.host, web.port), timeout=10) as sock:
        sock.sendall(head.encode())
        sock.shutdown(socket.SHUT_WR)
        reply = sock.makefile("rb").read()
    assert reply.startswith(b"HTTP/1.1 413"), reply[:60]


@pytest.mark.parametrize(
    ("path", "body", "status"), [("/nope", b"{}", 404), ("/rpc", b"x" * (1024 * 1024 + 1), 413)]
)
def test_a_refusal_that_closes_its_connection_says_so(
    web: Http, path: str, body: bytes, status: int
) -> None:
    conn = http.client.HTTPConnection(web.host, web.port, timeout=10)
    headers = {"Host": f"127.0.0.1:{web.port}", "Authorization": f"Bearer {web.token}"}
    try:
        conn.request("POST", path, body=body, headers=headers)
        resp = conn.getresponse()
        resp.read()
        assert resp.status == status and resp.getheader("Connection") == "close"
        conn.request("GET", "/v1/status", headers=headers)  # on a new connection, not a dead one
        resp = conn.getresponse()
        assert resp.status == 200 and json.loads(resp.read())["state"] == "ready"
    finally:
        conn.close()


def _first_reply_to_expect_100(web: Http, token: str, size: int) -> bytes:
    head = (
        f"POST /rpc HTTP/1.1\r\nHost: 127.0.0.1:{web.port}\r\nAuthorization: Bearer {token}"
        f"\r\nExpect: 100-continue\r\nContent-Length: {size}\r\n\r\n"
    )
    with socket.create_connection((web.host, web.port), timeout=10) as sock:
        sock.sendall(head.encode())
        first = sock.recv(65536)
        if first.startswith(b"HTTP/1.1 100"):  # invited: send the body, read the answer
            sock.sendall(b'{"jsonrpc": "2.0", "id": 1, "method": "hello"}'.ljust(size))
            first += sock.makefile("rb").readline()
        return first


def test_expect_100_continue_invites_only_a_body_that_will_be_read(web: Http) -> None:
    assert _first_reply_to_expect_100(web, "wrong", 100).startswith(b"HTTP/1.1 401")
    assert _first_reply_to_expect_100(web, web.token, 2**21).startswith(b"HTTP/1.1 413")
    reply = _first_reply_to_expect_100(web, web.token, 100)
    assert reply.startswith(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200"), reply[:80]


def test_a_refused_preflight_gets_the_json_error_body(web: Http) -> None:
    conn = http.client.HTTPConnection(web.host, web.port, timeout=10)
    try:
        for host, words in (("localhost", "https://page.example"), ("evil.example", "Host")):
            headers = {"Host": host, "Origin": "https://page.example"}
            conn.request("OPTIONS", "/rpc", headers=headers)
            resp = conn.getresponse()
            body = json.loads(resp.read())
            assert resp.status == 403 and words in body["error"]["message"]
            assert resp.getheader("Access-Control-Allow-Origin") is None
    finally:
        conn.close()


def test_changes_are_subscribed_as_the_socket_subscribes(web: Http, vault: Path) -> None:
    conn = http.client.HTTPConnection(web.host, web.port, timeout=5)
    headers = {"Host": f"127.0.0.1:{web.port}", "Authorization": f"Bearer {web.token}"}
    # A Windows-style path, as the socket's `subscribe` takes it.
    conn.request("GET", "/v1/changes?paths=diary%5C2026-07-21.md", headers=headers)
    resp = conn.getresponse()
    try:
        assert resp.status == 200
        events = []
        (vault / "diary" / "2026-07-21.md").write_text("## 09:00\nA new day.\n", encoding="utf-8")
        while len(events) < 2:
            line = resp.readline().decode()
            if line.startswith("event: "):
                events.append(line[7:].strip())
        assert events == ["subscribed", "changed"]
    finally:
        conn.close()
    assert web.request("GET", "/v1/changes?tags=x")[0] == 400  # the socket's params only


@pytest.mark.timeout(60)
def test_a_burst_of_connects_waits_in_the_backlog_not_in_syn_retries(
    vault: Path, start_daemon: Callable[..., DaemonProc]
) -> None:
    daemon = start_daemon(vault, "--http", "127.0.0.1:0")
    web = Http(daemon)
    socks: list[socket.socket] = []
    os.kill(daemon.proc.pid, signal.SIGSTOP)  # nothing is accepted: connects wait queued
    try:
        for _ in range(64):  # beyond the backlog, a SYN is dropped and retried after 1 s
            socks.append(socket.create_connection((web.host, web.port), timeout=0.5))
    finally:
        os.kill(daemon.proc.pid, signal.SIGCONT)
        for sock in socks:
            sock.close()
    assert web.request("GET", "/v1/status")[0] == 200


def test_an_unknown_parameter_of_a_get_is_refused_as_on_the_socket(web: Http) -> None:
    """``GET /v1/status?x=1`` and ``/v1/day/…?limit=3`` answered as if it were not there."""
    for path, told in (
        ("/v1/status?x=1", "unknown param(s) x"),
        ("/v1/day/2026-07-20?limit=3", "unknown param(s) limit"),
        ("/v1/day/2026-07-20?date=x", "the day is in the path"),
    ):
        status, body = web.request("GET", path)
        assert status == 400 and told in body["error"]["message"], (path, body)
    assert web.request("GET", "/v1/status")[0] == 200
    assert web.request("GET", "/v1/day/2026-07-20")[0] == 200


def test_a_head_gets_the_headers_of_its_get_and_no_body(web: Http) -> None:
    """``curl -I`` was answered 501 "Unsupported method"."""

    def head(path: str, token: str | None) -> http.client.HTTPResponse:
        conn = http.client.HTTPConnection(web.host, web.port, timeout=10)
        headers = {"Host": f"127.0.0.1:{web.port}"}
        if token is not None:
            headers["Authorization"] = f"Bearer {token}"
        try:
            conn.request("HEAD", path, headers=headers)
            resp = conn.getresponse()
            assert resp.read() == b""
        finally:
            conn.close()
        return resp

    status, body = web.request("GET", "/v1/status")
    assert status == 200 and body["state"] == "ready"
    served = head("/v1/days", web.token)
    days = web.request("GET", "/v1/days")[1]
    length = len(json.dumps(days, ensure_ascii=False).encode()) + 1
    assert served.status == 200 and served.getheader("Content-Length") == str(length)
    assert head("/v1/status", None).status == 401
    assert head("/v1/nowhere", web.token).status == 404
    stream = head("/v1/changes", web.token)
    assert stream.status == 405 and stream.getheader("Allow") == "GET"
