"""The HTTP endpoint's connections: a threading server that holds at most
``max_connections`` of them, and a server-sent event stream as the change feed sees a
subscriber (ADR-0013, ADR-0022). ``http.py`` routes and answers the requests."""

from __future__ import annotations

import contextlib
import json
import logging
import sys
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from socket import AF_INET6
from typing import Any

from .server import LISTEN_BACKLOG

log = logging.getLogger(__name__)

BUSY = "too many HTTP connections (max_connections); retry shortly"


class BoundedServer(ThreadingHTTPServer):
    """A thread per connection, at most ``max_connections`` of them: one more is answered
    503 and closed at once, before it is read (a crowd of idle connections, even without the
    token, must not take a thread and a descriptor each without end)."""

    daemon_threads = True
    # A burst of connects queues, as on the socket; the standard library's 5 dropped the
    # rest's SYNs, and each such client waited a second or more, or timed out.
    request_queue_size = LISTEN_BACKLOG
    max_connections = 256
    open_connections = 0
    refused = 0

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client gone mid-answer is no news; anything else goes to the log, not stderr."""
        if isinstance(sys.exc_info()[1], ConnectionError | TimeoutError):
            return
        log.exception("HTTP: error answering %s", client_address)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._count_lock = threading.Lock()

    def process_request(self, request: Any, client_address: Any) -> None:
        with self._count_lock:
            full = self.open_connections >= self.max_connections
            self.refused += full
            self.open_connections += not full
        if not full:
            super().process_request(request, client_address)
            return
        body = json.dumps({"error": {"code": -32000, "message": BUSY}}).encode()
        head = "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
        head += f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
        with contextlib.suppress(OSError):
            request.settimeout(0.5)
            request.sendall(head.encode() + body)
        self.shutdown_request(request)

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            with self._count_lock:
                self.open_connections -= 1


class BoundedServer6(BoundedServer):
    address_family = AF_INET6


class SsePeer:
    """A subscription's connection, as the change feed sees it (``subscriptions.Peer``),
    writing each JSON-RPC notification line as a server-sent ``changed`` event."""

    def __init__(self, handler: BaseHTTPRequestHandler) -> None:
        self.handler = handler
        self.sock = self  # the feed calls ``sock.sendall`` and ``sock.shutdown``
        self.send_lock = threading.Lock()
        self.idle_exempt = True
        self.on_close: list[Callable[[], None]] = []
        self.after_reply: list[Callable[[], None]] = []
        self.closed = threading.Event()

    def sendall(self, line: bytes) -> None:
        self.event("changed", line.strip())

    def shutdown(self, how: int) -> None:
        self.closed.set()

    def event(self, name: str, data: bytes) -> None:
        self.raw(b"event: " + name.encode() + b"\ndata: " + data + b"\n\n")

    def raw(self, data: bytes) -> None:
        """Write to the stream; the caller holds ``send_lock`` (the feed does)."""
        if self.closed.is_set():
            raise OSError("the event stream is closed")
        self.handler.wfile.write(data)
        self.handler.wfile.flush()
