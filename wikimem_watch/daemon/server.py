"""The daemon's Unix socket: accepting clients, line framing, and the method table.

One thread per connection reads request lines, dispatches each to a method, and writes one
response line (none for a notification); a last line without its newline is answered when
the client ends its side (``shutdown(SHUT_WR)``, ``printf ... | nc -N``). A connection never
blocks another, and no client (or crowd of clients) can lock the others out:

- reads wait only on their own socket, and at most ``idle_timeout_s`` since the
  connection's last complete request (a silent socket, or one trickling a partial line, is
  closed; a connection marked ``idle_exempt``, one holding a ``subscribe``, is kept);
- writes time out (a client that stops reading is dropped);
- at ``max_connections`` a newcomer is admitted by closing the connection idle the longest
  (never one in the middle of a request); only when every connection is busy is the
  newcomer refused with ``-32000``, and busy connections finish, so it never lasts
  (subscribed connections, never closed for idleness, are at most half of them);
- a line longer than ``max_request_bytes`` gets ``-32600`` and its connection is closed,
  and the unfinished lines held across *all* connections are bounded by
  ``max_buffered_bytes`` (the connection that would pass it gets ``-32000`` and is closed);
- the listen backlog is ``LISTEN_BACKLOG``, so a burst of connects queues instead of
  failing with ``EAGAIN``.

Methods hold the engine lock only while they read it. They are thin: they validate params
and call the engine, ``run_query`` or the daemon (:class:`Service`). ``METHODS`` is the
table docs/protocol.md must cover.
"""

from __future__ import annotations

import contextlib
import logging
import os
import selectors
import socket
import stat
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import ConfigError, WatchError
from .methods import METHODS, Service, dispatch
from .protocol import (
    INTERNAL_ERROR,
    INVALID_REQUEST,
    SERVER_BUSY,
    ProtocolError,
    decode_request,
    encode_error,
    encode_result,
)
from .subscriptions import CURRENT

__all__ = ["METHODS", "Connection", "Limits", "Server", "Service", "handle_line"]

log = logging.getLogger(__name__)

MAX_CONNECTIONS = 256
IDLE_TIMEOUT_S = 60.0
WRITE_TIMEOUT_S = 10.0
LISTEN_BACKLOG = 1024  # the kernel caps it at net.core.somaxconn


def handle_line(service: Service, line: bytes) -> tuple[bytes | None, str | None]:
    """Answer one request line: (response line or None for a notification, method run).

    Never raises for anything a client sends: a bug is logged and answered ``-32603``."""
    try:
        request = decode_request(line)
    except ProtocolError as exc:
        return encode_error(exc.request_id, exc.code, exc.message), None
    except Exception:
        log.exception("internal error decoding a request line")
        return encode_error(None, INTERNAL_ERROR, "internal error reading the request"), None
    answered = False
    try:
        result = dispatch(service, request.method, request.params)
        reply = encode_result(request.id, result)
        answered = True
    except WatchError as exc:
        reply = encode_error(request.id, exc.code, exc.message, exc.data)
    except ProtocolError as exc:
        reply = encode_error(request.id, exc.code, exc.message)
    except Exception:
        log.exception("internal error answering %r", request.method)
        reply = encode_error(
            request.id, INTERNAL_ERROR, f"internal error in {request.method!r} (see the daemon log)"
        )
    # The method is named only when it was answered with a result: a refused request (a
    # ``shutdown`` with a bad param) has no effect after its reply either.
    return (None if request.notification else reply), (request.method if answered else None)


@dataclass(slots=True, eq=False)
class Connection:
    """One client's bookkeeping: what eviction, the idle timeout and the byte budget read."""

    sock: socket.socket
    last_active: float  # monotonic time of the connect or of the last complete request
    busy: bool = False  # answering a request now: never evicted
    idle_exempt: bool = False  # e.g. a subscription: silent by design, never timed out
    evicted: bool = False
    held: int = 0  # bytes of an unfinished line, charged to max_buffered_bytes
    # Replies and subscription notifications share the socket: one writer at a time.
    send_lock: threading.Lock = field(default_factory=threading.Lock)
    on_close: list[Callable[[], None]] = field(default_factory=list)
    # Run once the reply to the request being answered is sent (a subscription's first
    # notification must not go out before the reply that names it).
    after_reply: list[Callable[[], None]] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Limits:
    """The socket's resource limits (all from the user's config; see config.py)."""

    max_request_bytes: int = 1024 * 1024
    max_buffered_bytes: int = 32 * 1024 * 1024
    max_connections: int = MAX_CONNECTIONS
    idle_timeout_s: float = IDLE_TIMEOUT_S  # 0: never
    write_timeout_s: float = WRITE_TIMEOUT_S


class Server:
    """A listening Unix socket serving :func:`handle_line` to many clients at once."""

    def __init__(
        self,
        path: Path,
        service: Service,
        *,
        limits: Limits | None = None,
        after_reply: Callable[[str], None] | None = None,
    ) -> None:
        self.path = path
        self.service = service
        self.limits = limits or Limits()
        self.after_reply = after_reply
        self._listener: socket.socket | None = None
        self._replacement: socket.socket | None = None  # see rebind()
        self._bound: tuple[int, int] | None = None  # (st_dev, st_ino) of our socket file
        self._wake_r, self._wake_w = os.pipe()
        self._conns: dict[Connection, threading.Thread] = {}
        self._conns_lock = threading.Lock()
        self._buffered = 0  # bytes of unfinished lines across connections
        self._accept_thread: threading.Thread | None = None
        self._closed = False
        self.evictions = 0
        self.refusals = 0

    # ------------------------------------------------------------------ lifecycle

    def bind(self) -> None:
        """Listen on ``path`` (0600), replacing a stale socket; refuse a live or foreign one."""
        self._listener, self._bound = self._listen()

    def _listen(self) -> tuple[socket.socket, tuple[int, int]]:
        _remove_stale_socket(self.path)
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old_umask = os.umask(0o177)  # the socket is born 0600: no window for other users
        try:
            sock.bind(os.fspath(self.path))
            os.chmod(self.path, 0o600)
            st = self.path.lstat()
            sock.listen(LISTEN_BACKLOG)
        except OSError as exc:
            sock.close()
            raise ConfigError(
                f"cannot listen on {str(self.path)!r}: {exc.strerror} "
                "(choose another path with --socket PATH or WIKIMEM_SOCK)"
            ) from None
        finally:
            os.umask(old_umask)
        return sock, (st.st_dev, st.st_ino)

    def listening_on_path(self) -> bool:
        """Whether ``path`` is still the socket we listen on (not deleted or replaced)."""
        try:
            st = self.path.lstat()
        except OSError:
            return False
        return (st.st_dev, st.st_ino) == self._bound

    def rebind(self) -> None:
        """Listen on ``path`` again, after our socket file was deleted (or its directory):
        clients find the daemon there, and ``stop`` reaches it. Raises ConfigError when the
        path cannot be used (e.g. another process serves there now)."""
        sock, bound = self._listen()
        with self._conns_lock:
            if self._closed:
                sock.close()
                return
            self._replacement, self._bound = sock, bound
        with contextlib.suppress(OSError):
            os.write(self._wake_w, b"r")  # the accept loop swaps it in

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
        with self._conns_lock:
            replacement, self._replacement = self._replacement, None
        if replacement is not None:
            replacement.close()
        if self._listener is not None:
            mine = self.listening_on_path()  # moved away with its folder, or replaced: not ours
            self._listener.close()
            if mine:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(self.path)
        with self._conns_lock:
            conns = list(self._conns.items())
        for conn, _ in conns:
            with contextlib.suppress(OSError):
                conn.sock.shutdown(socket.SHUT_RD)
        for conn, thread in conns:
            thread.join(timeout=2)
            with contextlib.suppress(OSError):
                conn.sock.close()
        os.close(self._wake_r)
        os.close(self._wake_w)

    def connection_count(self) -> int:
        """Live connections (an evicted one still closing does not count)."""
        with self._conns_lock:
            return sum(not c.evicted for c in self._conns)

    def stats(self) -> dict[str, object]:
        """Connections, buffered bytes and what the limits did, for ``status``."""
        with self._conns_lock:
            closing = sum(c.evicted for c in self._conns)
            return {
                "open": len(self._conns) - closing,
                "closing": closing,  # evicted, their threads finishing
                "buffered_bytes": self._buffered,
                "evicted_idle": self.evictions,
                "refused_busy": self.refusals,
                "max_connections": self.limits.max_connections,
                "idle_timeout_s": self.limits.idle_timeout_s,
            }

    # -------------------------------------------------------------------- serving

    def _accept_loop(self) -> None:
        assert self._listener is not None
        with selectors.DefaultSelector() as sel:
            sel.register(self._listener, selectors.EVENT_READ)
            sel.register(self._wake_r, selectors.EVENT_READ)
            while not self._closed:
                for key, _ in sel.select():
                    if key.fileobj == self._wake_r:
                        with self._conns_lock:
                            if self._closed:
                                return
                            replacement, self._replacement = self._replacement, None
                        os.read(self._wake_r, 64)
                        if replacement is not None:  # rebind(): listen there from now on
                            sel.unregister(self._listener)
                            self._listener.close()
                            self._listener = replacement
                            sel.register(replacement, selectors.EVENT_READ)
                        break
                    try:
                        sock, _addr = self._listener.accept()
                    except (BlockingIOError, InterruptedError):
                        continue
                    except OSError as exc:  # EMFILE and friends: keep the loop alive
                        log.warning("accept failed: %s", exc)
                        time.sleep(0.05)
                        continue
                    self._admit(sock)

    def _admit(self, sock: socket.socket) -> None:
        conn = Connection(sock, time.monotonic())
        with self._conns_lock:
            live = [c for c in self._conns if not c.evicted]
            if len(live) >= self.limits.max_connections and not self._evict_idlest(live):
                self.refusals += 1
                refused = True
            else:
                refused = False
                thread = threading.Thread(
                    target=self._serve_conn, args=(conn,), name="conn", daemon=True
                )
                self._conns[conn] = thread
        if refused:
            msg = "too many connections, all busy; retry shortly"
            _send_nowait(sock, encode_error(None, SERVER_BUSY, msg))
            sock.close()
            return
        thread.start()

    def _evict_idlest(self, live: list[Connection]) -> bool:
        """Close the connection idle the longest (never a busy or exempt one); under lock."""
        idle = [c for c in live if not c.busy and not c.idle_exempt]
        if not idle:
            return False
        victim = min(idle, key=lambda c: c.last_active)
        victim.evicted = True
        self.evictions += 1
        msg = "closing the connection idle the longest: the daemon is at max_connections"
        _send_nowait(victim.sock, encode_error(None, SERVER_BUSY, msg))
        with contextlib.suppress(OSError):
            victim.sock.shutdown(socket.SHUT_RDWR)  # its thread sees EOF and cleans up
        return True

    def _serve_conn(self, conn: Connection) -> None:
        try:
            self._converse(conn)
        except OSError as exc:
            log.debug("client connection closed: %s", exc)
        finally:
            for callback in conn.on_close:  # e.g. end its subscriptions
                callback()
            with self._conns_lock:
                self._conns.pop(conn, None)
                self._buffered -= conn.held
                conn.held = 0
            with contextlib.suppress(OSError):
                conn.sock.close()

    def _recv(self, conn: Connection) -> bytes | None:
        """The next chunk; None when the connection has been idle past its timeout."""
        timeout: float | None = None
        if self.limits.idle_timeout_s > 0 and not conn.idle_exempt:
            timeout = conn.last_active + self.limits.idle_timeout_s - time.monotonic()
            if timeout <= 0:
                return None
        conn.sock.settimeout(timeout)
        try:
            return conn.sock.recv(65536)
        except TimeoutError:
            return None

    def _converse(self, conn: Connection) -> None:
        buf = bytearray()
        scanned = 0
        limit = self.limits.max_request_bytes
        while True:
            nl = buf.find(b"\n", scanned)
            if nl < 0:
                scanned = len(buf)
                if len(buf) > limit:
                    self._too_long(conn)
                    return
                if not self._charge(conn, len(buf)):
                    return
                chunk = self._recv(conn)
                if chunk is None:
                    log.debug("closing a connection idle for %.0fs", self.limits.idle_timeout_s)
                    return
                if not chunk:  # EOF: a last line the client ended by closing is answered
                    if buf.strip():
                        self._answer(conn, bytes(buf))
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
            if not self._answer(conn, line):
                return

    def _answer(self, conn: Connection, line: bytes) -> bool:
        """Run one request line and send its reply; False when the client is gone."""
        with self._conns_lock:
            if conn.evicted:
                return False
            conn.busy = True
        try:
            CURRENT.peer = conn
            reply, method = handle_line(self.service, line)
            try:
                if reply is not None:
                    with conn.send_lock:
                        if not self._send(conn.sock, reply):
                            return False
            finally:
                started, conn.after_reply = conn.after_reply, []
                for callback in started:
                    callback()
            if method is not None and self.after_reply is not None:
                self.after_reply(method)
            return True
        finally:
            with self._conns_lock:
                conn.busy = False
                conn.last_active = time.monotonic()

    def _charge(self, conn: Connection, held: int) -> bool:
        """Account ``held`` unfinished bytes to ``conn``; False (answered) when over budget."""
        with self._conns_lock:
            self._buffered += held - conn.held
            conn.held = held
            total = self._buffered
        if total <= self.limits.max_buffered_bytes:
            return True
        msg = (
            f"the daemon holds {total} bytes of unfinished request lines across connections "
            f"(max_buffered_bytes {self.limits.max_buffered_bytes}); closing this one"
        )
        self._send(conn.sock, encode_error(None, SERVER_BUSY, msg))
        return False

    def _too_long(self, conn: Connection) -> None:
        limit = self.limits.max_request_bytes
        msg = f"request line longer than max_request_bytes ({limit}); closing"
        self._send(conn.sock, encode_error(None, INVALID_REQUEST, msg))

    def _send(self, sock: socket.socket, data: bytes) -> bool:
        """Write one reply; a client that does not read within the timeout is dropped."""
        try:
            sock.settimeout(self.limits.write_timeout_s)
            sock.sendall(data)
            return True
        except (TimeoutError, OSError) as exc:
            log.info("dropping a client that does not read its replies: %s", exc)
            return False


def _send_nowait(sock: socket.socket, data: bytes) -> None:
    """Best-effort notice to a socket we are about to close (never blocks the caller)."""
    with contextlib.suppress(OSError):
        sock.send(data, socket.MSG_DONTWAIT)


def _remove_stale_socket(path: Path) -> None:
    """Unlink a socket nobody listens on; refuse a live socket or a non-socket file."""
    try:
        st = path.lstat()
    except (FileNotFoundError, NotADirectoryError):
        return  # nothing there; bind() reports a path it cannot use
    except OSError as exc:
        raise ConfigError(
            f"cannot use socket path {str(path)!r}: {exc.strerror} (choose another --socket)"
        ) from None
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
