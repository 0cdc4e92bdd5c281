"""HttpEmbedder against a stub OpenAI-compatible server on 127.0.0.1 (http.server, port 0)."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest

from wikimem_watch.vectors.embedders import EmbedError
from wikimem_watch.vectors.hash_embedder import HashEmbedder
from wikimem_watch.vectors.http_embedder import HttpEmbedder


@dataclass
class Stub:
    """What the stub server saw, and how it should misbehave."""

    url: str = ""
    requests: list[dict[str, object]] = field(default_factory=list)
    auth: list[str | None] = field(default_factory=list)
    fail_first: int = 0  # answer HTTP 500 to this many requests first
    status: int = 200
    body: bytes | None = None  # a fixed (bad) body instead of embeddings
    dim: int = 16
    hang: threading.Event | None = None  # answer nothing until this is set
    redirect: str | None = None  # answer 302 to this URL instead
    trickle: threading.Event | None = None  # send a byte every 0.2 s until this is set
    huge: int = 0  # send this many bytes of blanks instead of embeddings


def _misbehaved(handler: BaseHTTPRequestHandler, stub: Stub) -> bool:
    """Redirect, hang, trickle or send too much, when the stub says so."""
    if stub.redirect is not None:
        handler.send_response(302)
        handler.send_header("Location", stub.redirect)
        handler.send_header("Content-Length", "0")
        handler.end_headers()
    elif stub.trickle is not None or stub.huge:
        _stream(handler, stub, stub.huge or 1 << 20)
    elif stub.hang is not None:
        stub.hang.wait(20)
    else:
        return False
    return True


def _stream(handler: BaseHTTPRequestHandler, stub: Stub, size: int) -> None:
    handler.send_response(200)
    handler.send_header("Content-Length", str(size))
    handler.end_headers()
    sent = 0
    while sent < size:
        if stub.trickle is not None:
            if stub.trickle.wait(0.2):
                return
            handler.wfile.write(b" ")
            handler.wfile.flush()
            sent += 1
        else:
            block = min(size - sent, 1 << 20)
            handler.wfile.write(b" " * block)
            sent += block


def _handler(stub: Stub) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # where urllib sends a redirected POST
            stub.auth.append(self.headers.get("Authorization"))
            self._send(200, b"{}")

        def do_POST(self) -> None:
            payload = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            stub.requests.append(payload)
            stub.auth.append(self.headers.get("Authorization"))
            if _misbehaved(self, stub):
                return None
            if self.path != "/v1/embeddings":
                return self._send(404, b'{"error": "no such route"}')
            if len(stub.requests) <= stub.fail_first:
                return self._send(500, b'{"error": "overloaded"}')
            if stub.body is not None or stub.status != 200:
                return self._send(stub.status, stub.body or b"{}")
            vectors = HashEmbedder(dim=stub.dim).embed_documents(payload["input"])
            data = [{"embedding": v.tolist(), "index": i} for i, v in enumerate(vectors)]
            data.reverse()  # clients must order by "index", not by position
            self._send(200, json.dumps({"data": data, "model": payload["model"]}).encode())

        def _send(self, status: int, body: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:  # quiet test output
            return

    return Handler


@pytest.fixture
def stub() -> Iterator[Stub]:
    yield from _serve()


@pytest.fixture
def other_host() -> Iterator[Stub]:
    yield from _serve()


def _serve() -> Iterator[Stub]:
    state = Stub()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
    state.url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def test_documents_are_batched_prefixed_and_ordered_by_index(stub: Stub) -> None:
    emb = HttpEmbedder(stub.url, "my-model", batch_size=2, document_prefix="passage: ")
    texts = ["alpha", "beta", "gamma", "delta", "epsilon"]
    out = emb.embed_documents(texts)
    assert [len(r["input"]) for r in stub.requests] == [2, 2, 1]  # type: ignore[arg-type]
    assert stub.requests[0] == {"model": "my-model", "input": ["passage: alpha", "passage: beta"]}
    expected = HashEmbedder(dim=16).embed_documents([f"passage: {t}" for t in texts])
    np.testing.assert_allclose(out, expected, atol=1e-6)
    assert out.dtype == np.float32 and emb.dim == 16


def test_query_gets_the_query_prefix_and_inputs_are_cut_to_max_chars(stub: Stub) -> None:
    emb = HttpEmbedder(stub.url, "intfloat/multilingual-e5-small", max_chars=5)
    vector = emb.embed_query("cats and dogs")
    assert stub.requests[0]["input"] == ["query: cats "]
    assert vector.shape == (16,) and np.linalg.norm(vector) == pytest.approx(1.0, abs=1e-5)


def test_bearer_key_comes_from_the_configured_env_var(
    stub: Stub, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MY_EMBED_KEY", "sk-test-123")
    HttpEmbedder(stub.url, "m", api_key_env="MY_EMBED_KEY").embed_query("x")
    monkeypatch.delenv("MY_EMBED_KEY")
    HttpEmbedder(stub.url, "m", api_key_env="MY_EMBED_KEY").embed_query("x")
    assert stub.auth == ["Bearer sk-test-123", None]


def test_a_500_is_retried_then_succeeds(stub: Stub) -> None:
    stub.fail_first = 2
    emb = HttpEmbedder(stub.url, "m", retries=2, backoff_s=0.01)
    assert emb.embed_documents(["a", "b"]).shape == (2, 16)
    assert len(stub.requests) == 3


def test_retries_exhausted_raise_embed_error_with_the_status(stub: Stub) -> None:
    stub.fail_first = 10
    with pytest.raises(EmbedError, match="HTTP 500"):
        HttpEmbedder(stub.url, "m", retries=1, backoff_s=0.01).embed_documents(["a"])
    assert len(stub.requests) == 2


def test_a_401_is_not_retried(stub: Stub) -> None:
    stub.status, stub.body = 401, b'{"error": "bad key"}'
    with pytest.raises(EmbedError, match=r"HTTP 401.*bad key"):
        HttpEmbedder(stub.url, "m", retries=3, backoff_s=0.01).embed_query("a")
    assert len(stub.requests) == 1


def test_bad_json_is_a_clear_embed_error(stub: Stub) -> None:
    stub.body = b"<html>not json</html>"
    with pytest.raises(EmbedError, match="unexpected body"):
        HttpEmbedder(stub.url, "m").embed_query("a")


def test_wrong_dimension_is_an_embed_error(stub: Stub) -> None:
    with pytest.raises(EmbedError, match="returned dim 16, expected 384"):
        HttpEmbedder(stub.url, "m", dim=384).embed_query("a")


def test_unreachable_endpoint_fails_fast_with_embed_error() -> None:
    with socket.socket() as sock:  # a port that was free a moment ago: connection refused
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    emb = HttpEmbedder(f"http://127.0.0.1:{port}/v1", "m", timeout_s=0.5, retries=1, backoff_s=0.01)
    with pytest.raises(EmbedError, match="unreachable"):
        emb.embed_documents(["a"])


def test_a_query_to_a_hanging_endpoint_gives_up_within_the_query_timeout(stub: Stub) -> None:
    stub.hang = threading.Event()
    emb = HttpEmbedder(stub.url, "m")  # the defaults: a user is waiting for this query
    try:
        with pytest.raises(EmbedError, match="timed out"):
            emb.embed_query("hello")
    finally:
        stub.hang.set()
    assert len(stub.requests) == 1, "a query is asked once, not retried"


def test_a_redirect_is_not_followed_and_the_key_goes_nowhere_else(
    stub: Stub, other_host: Stub, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MY_KEY", "sk-secret")
    stub.redirect = other_host.url.replace("127.0.0.1", "localhost") + "/steal"
    emb = HttpEmbedder(stub.url, "m", api_key_env="MY_KEY", retries=0)
    with pytest.raises(EmbedError, match=r"HTTP 302, a redirect to .*/steal.*not followed"):
        emb.embed_documents(["a"])
    assert stub.auth == ["Bearer sk-secret"]
    assert other_host.auth == [], "the API key was sent to the host a redirect named"


def test_an_endpoint_that_trickles_its_answer_cannot_hold_a_query(stub: Stub) -> None:
    stub.trickle = threading.Event()  # each byte in time for the socket timeout
    try:
        with pytest.raises(EmbedError, match="timed out reading the answer"):
            HttpEmbedder(stub.url, "m").embed_query("hello")
    finally:
        stub.trickle.set()


def test_a_runaway_body_is_refused_not_read_into_memory(stub: Stub) -> None:
    stub.huge = 64 << 20
    with pytest.raises(EmbedError, match="sent more than .* bytes"):
        HttpEmbedder(stub.url, "m").embed_query("hello")
