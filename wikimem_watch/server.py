"""The daemon's Unix socket: accepting clients, line framing, and the method table.

One thread per connection reads request lines, dispatches each to a method, and writes one
response line (none for a notification). A connection never blocks another: reads wait
only on their own socket, writes time out (a client that stops reading is dropped), and
methods hold the engine lock only while they read it. A line longer than
``max_request_bytes`` gets a ``-32600`` error and its connection is closed.

The methods are thin: they validate params and call the engine, ``run_query`` or the
daemon (:class:`Service`). ``METHODS`` is the table docs/protocol.md must cover.
"""

from __future__ import annotations

import contextlib
import logging
import os
import selectors
import socket
import stat
import threading
from collections.abc import Callable
from pathlib import Path

from .errors import ConfigError, WatchError
from .methods import METHODS, Service, dispatch
from .protocol import (
    INTERNAL_ERROR,
    INVALID_REQUEST,
    ProtocolError,
    decode_request,
    encode_error,
    encode_result,
)

__all__ = ["METHODS", "Server", "Service", "handle_line"]

log = logging.getLogger(__name__)

MAX_CONNECTIONS = 256
WRITE_TIMEOUT_S = 10.0


def handle_line(service: Service, line: bytes) -> tuple[bytes | None, str | None]:
    """Answer one request line: (response line or None for a notification, method run)."""
    try:
        request = decode_request(line)
    except ProtocolError as exc:
        return encode_error(exc.request_id, exc.code, exc.message), None
    try:
        result = dispatch(service, request.method, request.params)
        reply = encode_result(request.id, result)
    except WatchError as exc:
        reply = encode_error(request.id, exc.code, exc.message, exc.data)
    except ProtocolError as exc:
        reply = encode_error(request.id, exc.code, exc.message)
    except Exception:
        log.exception("internal error answering %r", request.method)
        reply = encode_error(
            request.id, INTERNAL_ERROR, f"internal error in {request.method!r} (see the daemon log)"
        )
    return (None if request.notification else reply), request.method


class Server:
    """A listening Unix socket serving :func:`handle_line` to many clients at once."""

    def __init__(
        self,
        path: Path,
        service: Service,
        *,
        max_request_bytes: int = 1024 * 1024,
        write_timeout_s: float = WRITE_TIMEOUT_S,
        after_reply: Callable[[str], None] | None = None,
    ) -> None:
        self.path = path
        self.service = service
        self.max_request_bytes = max_request_bytes
        self.write_timeout_s = write_timeout_s
        self.after_reply = after_reply
        self._listener: socket.socket | None = None
        self._wake_r, self._wake_w = os.pipe()
        self._conns: dict[int, tuple[socket.socket, threading.Thread]] = {}
        self._conns_lock = threading.Lock()
        self._accept_thread: threading.Thread | None = None
        self._closed = False

    # ------------------------------------------------------------------ lifecycle

    def bind(self) -> None:
        """Listen on ``path`` (0600), replacing a stale socket; refuse a live or foreign one."""
        _remove_stale_socket(self.path)
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old_umask = os.umask(0o177)  # the socket is born 0600: no window for other users
        try:
            sock.bind(os.fspath(self.path))
        except OSError as exc:
            sock.close()
            raise ConfigError(f"cannot listen on {str(self.path)!r}: {exc.strerror}") from None
        finally:
            os.umask(old_umask)
        os.chmod(self.path, 0o600)
        sock.listen(64)
        self._listener = sock

    def start(self) -> None:
        self._accept_thread = threading.Thread(target=self._accept_loop, name="accept")
        self._accept_thread.start()

    def close(self) -> None:
        """Stop accepting, let replies in flight finish, drop clients, remove the socket."""
        if self._closed:
            return
        self._closed = True
        with contextlib.suppress(OSError):
            os.write(self._wake_w, b"x")
        if self._accept_thread is not None:
            self._accept_thread.join(timeout=5)
        if self._listener is not None:
            self._listener.close()
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.path)
        with self._conns_lock:
            conns = list(self._conns.values())
        for conn, _ in conns:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RD)
        for conn, thread in conns:
            thread.join(timeout=2)
            with contextlib.suppress(OSError):
                conn.close()
        os.close(self._wake_r)
        os.close(self._wake_w)

    def connection_count(self) -> int:
        with self._conns_lock:
            return len(self._conns)

    # -------------------------------------------------------------------- serving

    def _accept_loop(self) -> None:
        assert self._listener is not None
        with selectors.DefaultSelector() as sel:
            sel.register(self._listener, selectors.EVENT_READ)
            sel.register(self._wake_r, selectors.EVENT_READ)
            while not self._closed:
                for key, _ in sel.select():
                    if key.fileobj == self._wake_r:
                        return
                    try:
                        conn, _addr = self._listener.accept()
                    except (BlockingIOError, InterruptedError):
                        continue
                    self._admit(conn)

    def _admit(self, conn: socket.socket) -> None:
        with self._conns_lock:
            if len(self._conns) >= MAX_CONNECTIONS:
                self._send(conn, encode_error(None, -32000, "too many connections; retry later"))
                conn.close()
                return
            thread = threading.Thread(
                target=self._serve_conn, args=(conn,), name=f"conn-{conn.fileno()}", daemon=True
            )
            self._conns[conn.fileno()] = (conn, thread)
        thread.start()

    def _serve_conn(self, conn: socket.socket) -> None:
        key = conn.fileno()
        try:
            self._converse(conn)
        except OSError as exc:
            log.debug("client connection closed: %s", exc)
        finally:
            with self._conns_lock:
                self._conns.pop(key, None)
            with contextlib.suppress(OSError):
                conn.close()

    def _converse(self, conn: socket.socket) -> None:
        buf = bytearray()
        scanned = 0
        limit = self.max_request_bytes
        while True:
            nl = buf.find(b"\n", scanned)
            if nl < 0:
                scanned = len(buf)
                if len(buf) > limit:
                    self._too_long(conn)
                    return
                chunk = conn.recv(65536)
                if not chunk:
                    return
                buf += chunk
                continue
            line = bytes(buf[:nl])
            del buf[: nl + 1]
            scanned = 0
            if len(line) > limit:
                self._too_long(conn)
                return
            if not line.strip():
                continue
            reply, method = handle_line(self.service, line)
            if reply is not None and not self._send(conn, reply):
                return
            if method is not None and self.after_reply is not None:
                self.after_reply(method)

    def _too_long(self, conn: socket.socket) -> None:
        msg = f"request line longer than max_request_bytes ({self.max_request_bytes}); closing"
        self._send(conn, encode_error(None, INVALID_REQUEST, msg))

    def _send(self, conn: socket.socket, data: bytes) -> bool:
        """Write one reply; a client that does not read within the timeout is dropped."""
        try:
            conn.settimeout(self.write_timeout_s)
            conn.sendall(data)
            conn.settimeout(None)
            return True
        except (TimeoutError, OSError) as exc:
            log.info("dropping a client that does not read its replies: %s", exc)
            return False


def _remove_stale_socket(path: Path) -> None:
    """Unlink a socket nobody listens on; refuse a live socket or a non-socket file."""
    try:
        st = path.lstat()
    except FileNotFoundError:
        return
    if not stat.S_ISSOCK(st.st_mode):
        raise ConfigError(f"{str(path)!r} exists and is not a socket; refusing to replace it")
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    probe.settimeout(1.0)
    try:
        probe.connect(os.fspath(path))
    except (ConnectionRefusedError, FileNotFoundError):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)  # stale: left behind by a daemon that was killed
        return
    except OSError as exc:
        raise ConfigError(f"cannot probe socket {str(path)!r}: {exc.strerror}") from None
    finally:
        probe.close()
    raise ConfigError(f"another process is serving on {str(path)!r}; choose another --socket")
