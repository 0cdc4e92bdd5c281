"""JSON-RPC 2.0 framing for the daemon's socket: one compact JSON object per line.

Pure functions over bytes, shared by the server and the client: decoding and validating a
request line, encoding results and error objects, and the standard error codes. No sockets
and no engine here, so every rule of the wire format is unit-testable in isolation.

Batch arrays are not supported: a line holding a JSON array is answered with one
``-32600 invalid request`` error (see docs/protocol.md). A request nested deeper than
``MAX_DEPTH`` levels is a ``-32700`` parse error, decided before anything walks it, so no
input can exhaust the recursion limit of a connection thread. ``NaN`` and ``Infinity``
literals parse (Python's json accepts them); each method's validation refuses them with
``-32602`` naming the field.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping

from ..record import Record

PROTOCOL_VERSION = 1

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
SERVER_BUSY = -32000  # implementation-defined server error: limits (connections, buffers)

MAX_DEPTH = 32  # a query needs 3 levels; nothing legitimate comes near this

RequestId = int | str | None
Params = dict[str, object]

_NO_ID = object()


class ProtocolError(Exception):
    """A request that cannot be dispatched; answered with ``code`` (id null when unknown)."""

    def __init__(self, code: int, message: str, request_id: RequestId = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.request_id = request_id


class Request(Record):
    """A decoded request. ``notification`` is True when the line had no ``id`` member."""

    __slots__ = ("method", "params", "id", "notification")

    def __init__(
        self,
        method: str,
        params: Params | None = None,
        id: RequestId = None,
        notification: bool = False,
    ) -> None:
        self.method = method
        self.params: Params = {} if params is None else params
        self.id = id
        self.notification = notification


class Response(Record):
    """A decoded response: exactly one of ``result`` / ``error`` is meaningful."""

    __slots__ = ("id", "result", "error")

    def __init__(
        self,
        id: RequestId,
        result: object = None,
        error: Mapping[str, object] | None = None,
    ) -> None:
        self.id = id
        self.result = result
        self.error = error


def _dumps(obj: object) -> bytes:
    text = json.dumps(obj, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    try:
        return text.encode("utf-8") + b"\n"
    except UnicodeEncodeError:  # a lone surrogate (from a "\\ud800" escape): keep it escaped
        text = json.dumps(obj, ensure_ascii=True, separators=(",", ":"), allow_nan=False)
        return text.encode("ascii") + b"\n"


def _valid_id(value: object) -> bool:
    return value is None or isinstance(value, str) or (type(value) is int)


def nesting_depth(line: bytes, limit: int = MAX_DEPTH) -> int:
    """How deep ``[``/``{`` nest in ``line`` outside strings, counting no further than
    ``limit + 1`` (linear, no recursion: it runs before the JSON parser may recurse)."""
    depth = deepest = 0
    in_string = escaped = False
    for byte in line:
        if in_string:
            if escaped:
                escaped = False
            elif byte == 0x5C:  # backslash
                escaped = True
            elif byte == 0x22:  # quote
                in_string = False
        elif byte == 0x22:
            in_string = True
        elif byte in (0x5B, 0x7B):  # [ {
            depth += 1
            if depth > deepest:
                deepest = depth
                if deepest > limit:
                    break
        elif byte in (0x5D, 0x7D):  # ] }
            depth -= 1
    return deepest


def _parse_detail(exc: Exception) -> str:
    """What was wrong with a line json could not read, in the client's terms (never Python's
    advice to itself, such as ``sys.set_int_max_str_digits``)."""
    if isinstance(exc, json.JSONDecodeError):
        return f"{exc.msg} at column {exc.colno}"
    if isinstance(exc, ValueError) and "integer string conversion" in str(exc):
        return f"an integer longer than {sys.get_int_max_str_digits()} digits"
    return str(exc)


def decode_request(line: bytes) -> Request:
    """Parse and validate one request line; raises :class:`ProtocolError` with the code."""
    if line.count(b"[") + line.count(b"{") > MAX_DEPTH and nesting_depth(line) > MAX_DEPTH:
        raise ProtocolError(PARSE_ERROR, f"parse error: JSON nested deeper than {MAX_DEPTH} levels")
    try:
        obj = json.loads(line)
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise ProtocolError(PARSE_ERROR, f"parse error: {_parse_detail(exc)}") from None
    if isinstance(obj, list):
        raise ProtocolError(INVALID_REQUEST, "batch requests are not supported; send one per line")
    if not isinstance(obj, dict):
        raise ProtocolError(
            INVALID_REQUEST, f"a request must be a JSON object, got {type(obj).__name__}"
        )
    raw_id = obj.get("id", _NO_ID)
    request_id: RequestId = raw_id if _valid_id(raw_id) else None
    if raw_id is not _NO_ID and not _valid_id(raw_id):
        raise ProtocolError(INVALID_REQUEST, f"id must be a string, an integer or null: {raw_id!r}")
    if obj.get("jsonrpc") != "2.0":
        raise ProtocolError(
            INVALID_REQUEST, f'"jsonrpc" must be "2.0", got {obj.get("jsonrpc")!r}', request_id
        )
    method = obj.get("method")
    if not isinstance(method, str) or not method:
        raise ProtocolError(
            INVALID_REQUEST, f'"method" must be a non-empty string, got {method!r}', request_id
        )
    params = obj.get("params", {})
    if params is None:
        params = {}
    if isinstance(params, list):
        raise ProtocolError(
            INVALID_PARAMS, '"params" must be an object: methods take named parameters', request_id
        )
    if not isinstance(params, dict):
        raise ProtocolError(
            INVALID_REQUEST,
            f'"params" must be an object (named parameters), got {type(params).__name__}',
            request_id,
        )
    return Request(method, params, request_id, raw_id is _NO_ID)


def encode_request(
    method: str, params: Mapping[str, object] | None, request_id: RequestId
) -> bytes:
    """One request line; ``request_id`` is sent even when null (see :func:`encode_notification`)."""
    msg: dict[str, object] = {"jsonrpc": "2.0", "method": method, "id": request_id}
    if params:
        msg["params"] = dict(params)
    return _dumps(msg)


def encode_notification(method: str, params: Mapping[str, object] | None = None) -> bytes:
    """A request line without ``id``: the server runs it and sends nothing back."""
    msg: dict[str, object] = {"jsonrpc": "2.0", "method": method}
    if params:
        msg["params"] = dict(params)
    return _dumps(msg)


def encode_result(request_id: RequestId, result: object) -> bytes:
    """A success response line. Raises ``ValueError``/``TypeError`` for non-JSON results."""
    return _dumps({"jsonrpc": "2.0", "id": request_id, "result": result})


def encode_error(request_id: RequestId, code: int, message: str, data: object = None) -> bytes:
    """An error response line; ``data`` is included only when given."""
    error: dict[str, object] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    try:
        return _dumps({"jsonrpc": "2.0", "id": request_id, "error": error})
    except (TypeError, ValueError):
        error.pop("data", None)
        return _dumps({"jsonrpc": "2.0", "id": request_id, "error": error})


def decode_response(line: bytes) -> Response:
    """Parse a response line (client side); raises :class:`ProtocolError` when malformed."""
    try:
        obj = json.loads(line)
    except (UnicodeDecodeError, ValueError):
        raise ProtocolError(PARSE_ERROR, "the daemon sent a line that is not JSON") from None
    if not isinstance(obj, dict) or obj.get("jsonrpc") != "2.0":
        raise ProtocolError(INVALID_REQUEST, "the daemon sent something other than JSON-RPC 2.0")
    request_id = obj.get("id")
    if not _valid_id(request_id):
        raise ProtocolError(INVALID_REQUEST, f"response id is invalid: {request_id!r}")
    error = obj.get("error")
    if error is not None:
        if not isinstance(error, dict) or not isinstance(error.get("code"), int):
            raise ProtocolError(INVALID_REQUEST, f"malformed error object: {error!r}")
        return Response(request_id, None, error)
    if "result" not in obj:
        raise ProtocolError(INVALID_REQUEST, "response has neither result nor error")
    return Response(request_id, obj["result"])
