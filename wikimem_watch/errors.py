"""Typed errors. Each carries a JSON-RPC error ``code`` so every shell maps it the same way."""

from __future__ import annotations


class WatchError(Exception):
    """Base class: a problem the caller can understand and fix."""

    code = -32000

    def __init__(self, message: str, data: object = None) -> None:
        super().__init__(message)
        self.message = message
        self.data = data


class BadRequest(WatchError):
    """The request (query fields, CLI value, protocol params) has the wrong shape."""

    code = -32602


class NotFound(WatchError):
    """A path, date or note that the index does not hold."""

    code = -32004


class ConfigError(WatchError):
    """A configuration value, vault path or socket path is unusable."""

    code = -32001


class DaemonUnavailable(WatchError):
    """No daemon answers on the socket for this vault."""

    code = -32002


def require_text(value: str, field: str) -> str:
    """``value`` unchanged when it is text that UTF-8 can hold; else :class:`BadRequest`.

    A JSON ``"\\ud800"`` escape, or bytes that are not UTF-8 read with ``surrogateescape``
    (a shell argument, a line of stdin), give a string with a lone surrogate, which no file,
    socket reply or terminal can take."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        bad = f"U+{ord(value[exc.start]):04X}"
        raise BadRequest(
            f'"{field}" is not valid text: a lone surrogate ({bad}) at character {exc.start}; '
            "send UTF-8"
        ) from None
    return value
