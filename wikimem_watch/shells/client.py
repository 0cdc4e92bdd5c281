"""The socket client: find a vault's daemon, send JSON-RPC requests, map errors back.

The socket is found the way the daemon chose it: an explicit ``--socket``/``WIKIMEM_SOCK``
wins; otherwise the vault's live lock file names the socket its daemon listens on (so a
daemon started with a custom ``--socket`` is still found from ``--vault``); otherwise the
default path derived from the vault. The default path is tried first, once: when a daemon
answers there it is the vault's (one daemon per vault and machine), and the lock, which
lives in the runtime directory under a hashed name, is read only when none does. Errors
come back as :class:`WatchError` with the daemon's code; no daemon at all is
:class:`DaemonUnavailable`.

Connecting retries briefly (``CONNECT_RETRY_S``, backing off) when the daemon is there but
cannot take the connection yet: ``EAGAIN`` (its listen backlog is full during a burst of
clients) always, and "refused"/"no such socket" only when the vault's lock says a daemon is
running (it is starting up, or replacing a stale socket). A connection the daemon closed
while we were idle (``idle_timeout_s``, or eviction at ``max_connections``) is reopened
once, before a request is sent, so nothing is ever sent twice.
"""

from __future__ import annotations

import errno
import itertools
import os
import socket
import time
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType

from ..daemon.protocol import ProtocolError, decode_response, encode_request
from ..daemon.runtime import default_socket_path, lock_path, read_live_lock
from ..errors import DaemonUnavailable, WatchError

TYPE_CHECKING = False  # `typing` costs a client run milliseconds; type checkers see True
if TYPE_CHECKING:
    from ..config import Config
    from ..settings import VaultLocation

DEFAULT_TIMEOUT_S = 600.0  # a reindex of a big vault may take minutes
# Every other method answers in milliseconds (a write waits at most for the start from the
# snapshot): a daemon silent this long is stopped (SIGSTOP, a debugger) or stuck, and a
# `status` or `query` says so instead of waiting ten minutes.
QUICK_TIMEOUT_S = 30.0
SLOW_METHODS = frozenset({"reindex", "embed", "append_diary", "upsert_wiki", "delete_wiki"})
CONNECT_RETRY_S = 5.0  # how long a busy or starting daemon is waited for
_BUSY = (errno.EAGAIN, errno.EWOULDBLOCK, errno.EINTR)
_ABSENT = (errno.ECONNREFUSED, errno.ENOENT)


class RemoteError(WatchError):
    """An error object the daemon answered with (its JSON-RPC ``code`` is kept)."""

    def __init__(self, code: int, message: str, data: object = None) -> None:
        super().__init__(message, data)
        self.code = code


def find_socket(config: Config | VaultLocation) -> Path:
    """The socket of this vault's daemon (see the module docstring for the order)."""
    if config.socket is not None:
        return config.socket
    info = read_live_lock(lock_path(config))
    if info is not None and info.socket:
        return Path(info.socket)
    return default_socket_path(config)


def open_socket(
    path: Path, timeout_s: float, *, retry_s: float = CONNECT_RETRY_S, starting: bool = False
) -> socket.socket:
    """A connected socket to ``path``, retrying for up to ``retry_s`` while the daemon is
    busy (``EAGAIN``) or, with ``starting``, not listening yet. Raises DaemonUnavailable."""
    deadline = time.monotonic() + retry_s
    delay = 0.002
    while True:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(timeout_s)
        try:
            sock.connect(os.fspath(path))
            return sock
        except OSError as exc:
            sock.close()
            retry = exc.errno in _BUSY or (starting and exc.errno in _ABSENT)
            if not retry or time.monotonic() + delay > deadline:
                raise _unavailable(path, exc) from None
        time.sleep(delay)
        delay = min(delay * 2, 0.1)


def _unavailable(path: Path, exc: OSError) -> DaemonUnavailable:
    if exc.errno in (*_ABSENT, errno.ENOTDIR):
        return DaemonUnavailable(f"no daemon is listening on {str(path)!r}")
    if exc.errno in _BUSY:
        return DaemonUnavailable(f"the daemon on {str(path)!r} is too busy to accept; retry")
    return DaemonUnavailable(f"cannot connect to {str(path)!r}: {exc}")


class Client:
    """One connection to a daemon; many requests over it, one at a time."""

    def __init__(
        self,
        path: Path,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        *,
        retry_s: float = CONNECT_RETRY_S,
        starting: bool = False,
    ) -> None:
        self.path = path
        self.timeout_s = timeout_s
        self.retry_s = retry_s
        self._ids = itertools.count(1)
        self._sock = open_socket(path, timeout_s, retry_s=retry_s, starting=starting)
        self._reader = self._sock.makefile("rb")
        self.reconnects = 0

    def _closed_by_daemon(self) -> bool:
        """True when the daemon closed this idle connection (EOF or an unsolicited notice
        waiting): nothing has been sent on it since our last reply."""
        self._sock.settimeout(0)  # a timeout socket would report "timed out", not EAGAIN
        try:
            self._sock.recv(1, socket.MSG_PEEK)
        except BlockingIOError:
            return False  # nothing to read: the connection is alive and quiet
        except OSError:
            return True
        finally:
            self._sock.settimeout(self.timeout_s)
        return True  # EOF (b""), or a notice sent before any request of ours

    def _reopen_if_closed(self) -> None:
        if not self._closed_by_daemon():
            return
        self.close()
        self._sock = open_socket(self.path, self.timeout_s, retry_s=self.retry_s)
        self._reader = self._sock.makefile("rb")
        self.reconnects += 1

    def call(self, method: str, params: Mapping[str, object] | None = None) -> object:
        """Send one request and return its result; raise :class:`RemoteError` on an error."""
        request_id = next(self._ids)
        self._reopen_if_closed()
        wait = self.timeout_s if method in SLOW_METHODS else min(self.timeout_s, QUICK_TIMEOUT_S)
        try:
            self._sock.settimeout(wait)
            self._sock.sendall(encode_request(method, params, request_id))
            line = self._reader.readline()
        except TimeoutError:
            self.close()  # a late reply must never be read as the next request's
            raise DaemonUnavailable(
                f"the daemon on {str(self.path)!r} did not answer {method!r} within {wait:g}s "
                "(stopped, e.g. by SIGSTOP or a debugger, or stuck; see its log)"
            ) from None
        except OSError as exc:
            # The daemon may have answered and closed before reading it all (a request over
            # its size limit): its answer says why, where the broken pipe would not.
            line = self._answer_left() or b""
            if not line:
                raise DaemonUnavailable(f"lost the connection to the daemon: {exc}") from None
        if not line:
            raise DaemonUnavailable("the daemon closed the connection")
        try:
            response = decode_response(line)
        except ProtocolError as exc:
            raise DaemonUnavailable(exc.message) from None
        if response.error is not None:
            code = response.error.get("code")
            raise RemoteError(
                code if isinstance(code, int) else -32603,
                str(response.error.get("message", "error")),
                response.error.get("data"),
            )
        if response.id != request_id:
            raise DaemonUnavailable(f"reply id {response.id!r} does not match {request_id}")
        return response.result

    def _answer_left(self) -> bytes | None:
        """A line the daemon sent before it closed the connection, if one is waiting."""
        try:
            self._sock.settimeout(0.5)
            return self._reader.readline()
        except OSError:
            return None
        finally:
            self._sock.settimeout(self.timeout_s)

    def close(self) -> None:
        self._reader.close()
        self._sock.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def call_sent(client: Client, method: str, params: Mapping[str, object]) -> object:
    """``client.call`` for a request that may write: once it is sent, a lost answer may hide
    a write made, so the failure says so and is never taken for "no daemon" (which would
    make the write again in-process)."""
    try:
        return client.call(method, params)
    except DaemonUnavailable as exc:
        raise DaemonUnavailable(
            f"{exc.message}; the request was sent and a write may have been made: see "
            "`wikimem-watch journal` before writing it again"
        ) from None


def connect(config: Config | VaultLocation | None, socket_path: Path | None = None) -> Client:
    """A client for ``socket_path`` or for the vault of ``config`` (see the module docstring
    for the order in which the socket is looked for)."""
    if socket_path is not None:
        return Client(socket_path)
    if config is None:
        raise DaemonUnavailable("give --vault DIR or --socket PATH")
    if config.socket is None:
        try:  # the usual case: the vault's daemon on its default path, settled in one connect
            client = Client(default_socket_path(config), retry_s=0.0)
        except DaemonUnavailable:
            pass  # none there (a custom --socket, a daemon still starting, or none at all)
        else:
            client.retry_s = CONNECT_RETRY_S  # a reopen later waits for a busy daemon as usual
            return client
    live = read_live_lock(lock_path(config)) is not None
    return Client(find_socket(config), starting=live)
