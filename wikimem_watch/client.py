"""The socket client: find a vault's daemon, send JSON-RPC requests, map errors back.

The socket is found the way the daemon chose it: an explicit ``--socket``/``WIKIMEM_SOCK``
wins; otherwise the vault's live lock file names the socket its daemon listens on (so a
daemon started with a custom ``--socket`` is still found from ``--vault``); otherwise the
default path derived from the vault. Errors come back as :class:`WatchError` with the
daemon's code; no daemon at all is :class:`DaemonUnavailable`.
"""

from __future__ import annotations

import itertools
import os
import socket
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType

from .config import Config
from .errors import DaemonUnavailable, WatchError
from .protocol import ProtocolError, decode_response, encode_request
from .runtime import default_socket_path, lock_path, read_live_lock

DEFAULT_TIMEOUT_S = 600.0  # a reindex of a big vault may take minutes


class RemoteError(WatchError):
    """An error object the daemon answered with (its JSON-RPC ``code`` is kept)."""

    def __init__(self, code: int, message: str, data: object = None) -> None:
        super().__init__(message, data)
        self.code = code


def find_socket(config: Config) -> Path:
    """The socket of this vault's daemon (see the module docstring for the order)."""
    if config.socket is not None:
        return config.socket
    info = read_live_lock(lock_path(config))
    if info is not None and info.socket:
        return Path(info.socket)
    return default_socket_path(config)


class Client:
    """One connection to a daemon; many requests over it, one at a time."""

    def __init__(self, path: Path, timeout_s: float = DEFAULT_TIMEOUT_S) -> None:
        self.path = path
        self._ids = itertools.count(1)
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(timeout_s)
        try:
            sock.connect(os.fspath(path))
        except (FileNotFoundError, ConnectionRefusedError, NotADirectoryError):
            sock.close()
            raise DaemonUnavailable(f"no daemon is listening on {str(path)!r}") from None
        except OSError as exc:
            sock.close()
            raise DaemonUnavailable(f"cannot connect to {str(path)!r}: {exc}") from None
        self._sock = sock
        self._reader = sock.makefile("rb")

    def call(self, method: str, params: Mapping[str, object] | None = None) -> object:
        """Send one request and return its result; raise :class:`RemoteError` on an error."""
        request_id = next(self._ids)
        try:
            self._sock.sendall(encode_request(method, params, request_id))
            line = self._reader.readline()
        except TimeoutError:
            raise DaemonUnavailable(f"the daemon did not answer {method!r} in time") from None
        except OSError as exc:
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


def connect(config: Config | None, socket_path: Path | None = None) -> Client:
    """A client for ``socket_path`` or for the vault of ``config``."""
    if socket_path is None:
        if config is None:
            raise DaemonUnavailable("give --vault DIR or --socket PATH")
        socket_path = find_socket(config)
    return Client(socket_path)
