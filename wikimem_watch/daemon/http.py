"""HTTP + JSON beside the socket, for consumers that cannot open a Unix socket (ADR-0013).

A thin skin over the same method table: ``POST /rpc`` takes the JSON-RPC objects the socket
takes and answers through :func:`~.server.handle_line`; ``GET /v1/query``, ``/v1/days``,
``/v1/day/DATE`` and ``/v1/status`` call the same methods for quick use. No retrieval or
write logic lives here.

Secure by default, because a browser can reach loopback too:
- it binds a loopback address only (another one needs ``http_allow_remote``, with a warning);
- every request carries ``Authorization: Bearer <token>``; the token is made on first start
  and kept 0600 beside the daemon's lock, outside the (synced) vault (:func:`token_path`);
- a ``Host`` header that is not a loopback name is refused (DNS rebinding);
- no CORS headers unless the user lists origins (``http_cors_origins``);
- bodies over ``max_request_bytes`` are refused (413), as lines are on the socket.
"""

from __future__ import annotations

import errno
import hmac
import http.client
import io
import ipaddress
import json
import logging
import os
import re
import secrets
import stat
import threading
import time
from collections.abc import Callable, Mapping
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from socket import socket
from typing import Any
from urllib.parse import parse_qs, urlsplit

from ..atomic import atomic_write
from ..config import Config
from ..errors import BadRequest, ConfigError, NotFound, WatchError
from .http_conns import BoundedServer, BoundedServer6, SsePeer
from .methods import Service, dispatch
from .protocol import INVALID_PARAMS, METHOD_NOT_FOUND, ProtocolError
from .runtime import private_dir, runtime_dir, vault_key
from .server import handle_line
from .subscriptions import CURRENT

log = logging.getLogger(__name__)

SSE_KEEPALIVE_S = 15.0  # a comment line this often finds a client that went away
LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1", "[::1]"})
# GET /v1/query parameters that are lists (comma-separated in the URL).
_NON_ASCII = re.compile(rb"[\x80-\xff]")
_DISCARD_S = 2.0  # how long a refused body is read and dropped
# A request's header lines, read before the token is checked: the standard library alone
# allows 100 lines of 64 KiB, and a crowd of connections each sending that held gigabytes.
MAX_HEAD_BYTES = 64 * 1024
_LIST_PARAMS = frozenset({"kinds", "paths", "tags"})
# GET /v1/query parameters that are numbers or booleans, which a URL spells as text.
_INT_PARAMS = frozenset({"k", "budget_tokens"})
_FLOAT_PARAMS = frozenset({"half_life_days"})
_BOOL_PARAMS = frozenset({"explain", "expand_links", "parse_time"})
_BOOLS = {"true": True, "1": True, "false": False, "0": False}


def parse_address(value: str, allow_remote: bool) -> tuple[str, int]:
    """``HOST:PORT`` (``[::1]:PORT`` for IPv6) → (host, port); a non-loopback host needs
    ``allow_remote``. Port 0 asks the system for a free one."""
    host, sep, port_text = value.rpartition(":")
    if not sep or not port_text.isdigit() or int(port_text) > 65535:
        raise ConfigError(f"http={value!r}: expected HOST:PORT, e.g. 127.0.0.1:8765")
    host = host.strip("[]") or "127.0.0.1"
    if not _is_loopback(host):
        if not allow_remote:
            raise ConfigError(
                f"http={value!r}: {host!r} is not a loopback address; the endpoint would be "
                "reachable from other machines (give --http-allow-remote to mean it)"
            )
        log.warning("HTTP endpoint on %s: reachable beyond this machine (bearer token only)", host)
    return host, int(port_text)


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def token_path(config: Config) -> Path:
    """Where this vault's HTTP token is kept: per machine, beside the lock, never synced."""
    return runtime_dir() / f"{vault_key(config)}.http-token"


def load_or_make_token(path: Path) -> str:
    """The token in ``path``, made (0600, atomically) when there is none yet, or when the one
    there is no secret: not a regular file of ours, or readable by anyone else (a ``chmod``
    or a copy loosened it). A new one replaces it, and clients read it again."""
    private_dir(path.parent)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        fd = -1
    except OSError as exc:
        if exc.errno != errno.ELOOP:
            raise ConfigError(f"cannot read the HTTP token {str(path)!r}: {exc}") from None
        fd = -1  # a symlink: replaced below (os.replace swaps the link, not its target)
    if fd >= 0:
        try:
            st = os.fstat(fd)
            private = stat.S_ISREG(st.st_mode) and st.st_uid == os.geteuid()
            private = private and not st.st_mode & 0o077
            token = os.read(fd, 4096).decode("ascii").strip() if private else ""
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"cannot read the HTTP token {str(path)!r}: {exc}") from None
        finally:
            os.close(fd)
        if len(token) >= 32:
            return token
        if not private:
            log.warning("the HTTP token %s was not private to this user: made a new one", path)
    token = secrets.token_urlsafe(32)
    try:  # a temp file made 0600 (mkstemp), renamed over a symlink, never into its target
        atomic_write(path, token.encode("ascii") + b"\n")
    except OSError as exc:  # a folder planted there: said, not a traceback
        raise ConfigError(f"cannot write the HTTP token {str(path)!r}: {exc}") from None
    return token


def start_http(
    service: Service, config: Config, after_reply: Callable[[str], None]
) -> HttpEndpoint | None:
    """Start the endpoint ``config.http`` asks for (None when it asks for none)."""
    if not config.http:
        return None
    address = parse_address(config.http, config.http_allow_remote)
    token = load_or_make_token(token_path(config))
    try:
        endpoint = HttpEndpoint(
            service,
            address,
            token,
            max_body_bytes=config.max_request_bytes,
            cors_origins=config.http_cors_origins,
            after_reply=after_reply,
            max_connections=config.max_connections,
            idle_timeout_s=config.idle_timeout_s,
        )
    except OSError as exc:
        raise ConfigError(f"cannot listen on http={config.http!r}: {exc.strerror}") from None
    endpoint.start()
    log.info("HTTP on %s (token in %s)", endpoint.url, token_path(config))
    return endpoint


class HttpEndpoint:
    """The HTTP listener of one daemon: a thread per connection (at most
    ``max_connections``, each closed after ``idle_timeout_s`` without a request), stopped
    with the daemon."""

    def __init__(
        self,
        service: Service,
        address: tuple[str, int],
        token: str,
        *,
        max_body_bytes: int,
        cors_origins: tuple[str, ...] = (),
        after_reply: Callable[[str], None] | None = None,
        max_connections: int = 256,
        idle_timeout_s: float = 60.0,
    ) -> None:
        self.service = service
        self.token = token
        self.max_body_bytes = max_body_bytes
        self.cors_origins = cors_origins
        self.after_reply = after_reply
        # A socket timeout on every read and write: an idle keep-alive connection, a client
        # that sends half a request or one that stops reading an event stream is closed.
        timeout = idle_timeout_s or None
        handler = type("Handler", (_Handler,), {"endpoint": self, "timeout": timeout})
        server = BoundedServer6 if ":" in address[0] else BoundedServer  # "[::1]:8765"
        self.httpd = server(address, handler)
        self.httpd.max_connections = max_connections
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host, port = str(self.httpd.server_address[0]), int(self.httpd.server_address[1])
        shown = f"[{host}]" if ":" in host else host
        return f"http://{shown}:{port}"

    def start(self) -> None:
        self._thread = threading.Thread(
            target=self.httpd.serve_forever, name="http", kwargs={"poll_interval": 0.2}
        )
        self._thread.daemon = True
        self._thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        if self._thread is not None:
            self._thread.join(5)


class _RequestReader(io.RawIOBase):
    """A connection's reads, with a deadline per request: the request line, the headers and
    the body must all arrive within ``idle_timeout_s`` of the previous reply (or of the
    connect), as a socket line must. The socket timeout alone bounds each read, so a request
    trickled a line at a time would hold its connection, and one of ``max_connections``,
    for good. While the headers are read, at most ``head_left`` more bytes are."""

    def __init__(self, sock: socket) -> None:
        self.sock = sock
        self.deadline: float | None = None  # monotonic; None: no deadline (idle_timeout_s 0)
        self.head_left: int | None = None

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        if self.head_left is not None and self.head_left <= 0:
            # ``parse_request`` answers an HTTPException from the headers' reader with 431.
            raise http.client.HTTPException(f"request headers over {MAX_HEAD_BYTES >> 10} KiB")
        current = self.sock.gettimeout()  # ``_discard`` may have set a shorter one
        if self.deadline is not None:
            left = self.deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("the request did not arrive within idle_timeout_s")
            if current is None or left < current:
                self.sock.settimeout(left)
        try:
            got = self.sock.recv_into(buffer)
        finally:
            self.sock.settimeout(current)
        if self.head_left is not None:
            self.head_left -= got
        return got


class _Handler(BaseHTTPRequestHandler):
    endpoint: HttpEndpoint
    protocol_version = "HTTP/1.1"
    server_version = "wikimem-watch"
    _reader: _RequestReader
    _expects_100 = False

    def setup(self) -> None:
        super().setup()
        self.rfile.close()  # the socket's own reader: closed, or the socket outlives us
        self._reader = _RequestReader(self.connection)
        self.rfile = io.BufferedReader(self._reader)

    def handle_one_request(self) -> None:
        self._expects_100 = False
        self._reader.deadline = time.monotonic() + self.timeout if self.timeout else None
        super().handle_one_request()

    def version_string(self) -> str:
        """``Server: wikimem-watch``: the standard library would add ``Python/3.x.y`` to
        every answer, refusals included, telling any local client which interpreter runs."""
        return self.server_version

    def log_message(self, format: str, *args: object) -> None:
        log.debug("http %s", format % args)

    def parse_request(self) -> bool:
        """Percent-escape raw non-ASCII bytes in the request line first: ``curl '…?q=火锅'``
        sends UTF-8 unescaped, and the standard library would split the line at bytes that
        read as Latin-1 whitespace (0x85, 0xA0). ``parse_qs`` decodes the escapes as UTF-8."""
        line: bytes = getattr(self, "raw_requestline", b"")  # set by handle_one_request
        escaped = _NON_ASCII.sub(lambda m: b"%%%02X" % m[0][0], line.rstrip(b"\r\n"))
        self.raw_requestline = escaped + b"\r\n"
        self._reader.head_left = MAX_HEAD_BYTES  # the headers are read next
        try:
            return super().parse_request()
        finally:
            self._reader.head_left = None

    def handle_expect_100(self) -> bool:
        """``Expect: 100-continue``: the ``100 Continue`` waits until the request is admitted
        and its body allowed (:meth:`_body`), so a refused client is not invited to send it."""
        self._expects_100 = True
        return True

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """The standard library's own refusals (a malformed request line, an unsupported
        method) in the same JSON error body as ours, not an HTML page."""
        self.close_connection = True
        text = f"{message}: {explain}" if message and explain else message or explain
        try:
            self._send_error_body(code, text or self.responses.get(code, ("",))[0])
        except OSError:
            pass  # the client is gone; the connection closes anyway

    # ------------------------------------------------------------------ routing

    def do_GET(self) -> None:
        if not self._admitted():
            return
        url = urlsplit(self.path)
        query = {k: v[-1] for k, v in parse_qs(url.query, keep_blank_values=True).items()}
        parts = [p for p in url.path.split("/") if p]
        try:
            if parts == ["v1", "query"]:
                result = self._call("query", {k: _query_param(k, v) for k, v in query.items()})
            elif parts == ["v1", "days"]:
                result = self._call("days", query)
            elif len(parts) == 3 and parts[:2] == ["v1", "day"]:
                if "date" in query:
                    raise BadRequest("the day is in the path (/v1/day/YYYY-MM-DD), not date=")
                result = self._call("day", {**query, "date": parts[2]})  # others refused
            elif parts == ["v1", "status"]:
                result = self._call("status", query)  # a parameter is refused, as on the socket
            elif parts == ["v1", "changes"]:
                self._stream_changes(query)
                return
            elif parts == ["rpc"]:  # it is there: it takes a POST
                raise NotFound("/rpc takes a POST of one JSON-RPC object, not a GET")
            else:
                raise NotFound(f"no such endpoint {url.path!r}; see docs/protocol.md (HTTP)")
        except (WatchError, ProtocolError) as exc:
            self._error(exc)
            return
        except Exception:
            log.exception("internal error answering GET %s", url.path)
            self._send_error_body(500, f"internal error in GET {url.path} (see the daemon log)")
            return
        self._json(200, result)

    def do_HEAD(self) -> None:
        """What the GET would answer, its headers only (``curl -I``): the same token, Host
        and errors. The event stream is a GET's alone."""
        if [p for p in urlsplit(self.path).path.split("/") if p] != ["v1", "changes"]:
            self.do_GET()
        elif self._admitted():
            self._send_error_body(405, "/v1/changes is an event stream: GET it")

    def do_POST(self) -> None:
        if not self._admitted():
            return
        if urlsplit(self.path).path != "/rpc":
            self.close_connection = True  # its body is not read
            self._error(NotFound(f"POST goes to /rpc, not {self.path!r}"))
            return
        body = self._body()
        if body is None:
            return
        reply, method = handle_line(self.endpoint.service, body)
        if reply is None:
            self._send(204, b"", "application/json")
        else:
            self._send(200, reply, "application/json")
        if method is not None and self.endpoint.after_reply is not None:
            self.endpoint.after_reply(method)

    def do_OPTIONS(self) -> None:  # a CORS preflight, answered only for listed origins
        self.close_connection |= self._has_body()  # not read: it must not be the next request
        origin = self.headers.get("Origin")
        if not self._host_ok():
            self._refuse_host()
            return
        if origin not in self.endpoint.cors_origins:
            self._send_error_body(403, f"origin {origin!r} is not in http_cors_origins")
            return
        self.send_response(204)
        self.send_header("Access-Control-Allow-Origin", origin)
        self.send_header("Access-Control-Allow-Methods", "GET, POST")
        self.send_header("Access-Control-Allow-Headers", "Authorization, Content-Type")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def _stream_changes(self, query: Mapping[str, str]) -> None:
        """Server-sent events: the ``changed`` notifications of the socket's ``subscribe``
        made with the query's ``paths``, ``kinds`` (comma-separated) and ``q``, until the
        client goes away."""
        params = {
            k: [p for p in v.split(",") if p] if k in _LIST_PARAMS else v or None
            for k, v in query.items()
        }
        peer = SsePeer(self)
        # Subscribed first: a refusal (no searchable words, the subscription cap) is an error
        # answer, not a 200 stream with an error in it. Its sender waits for ``after_reply``.
        CURRENT.peer = peer
        try:
            made = dispatch(self.endpoint.service, "subscribe", params)
        finally:
            CURRENT.peer = None
        self.close_connection = True
        try:
            with peer.send_lock:  # "subscribed" goes out before the first change
                self.send_response(200)
                self._cors()
                self.send_header("Content-Type", "text/event-stream; charset=utf-8")
                self.send_header("Cache-Control", "no-store")
                self.end_headers()
                peer.event("subscribed", json.dumps(made).encode())
            for start in peer.after_reply:
                start()
            while not peer.closed.wait(SSE_KEEPALIVE_S):
                with peer.send_lock:
                    peer.raw(b": keep-alive\n\n")  # finds a client that went away
        except OSError:
            pass
        finally:
            peer.closed.set()
            for callback in peer.on_close:
                callback()

    # ------------------------------------------------------------------ checks

    def _host_ok(self) -> bool:
        host = (self.headers.get("Host") or "").strip()
        name = host.rsplit(":", 1)[0] if not host.endswith("]") else host
        bound = str(self.endpoint.httpd.server_address[0])
        if name.lower() in LOOPBACK_NAMES or name.strip("[]") == bound:
            return True
        # Bound to every address (--http-allow-remote): a client names one of this machine's
        # by its IP. A name (what DNS rebinding uses) is still refused.
        return bound in ("0.0.0.0", "::") and _is_ip(name.strip("[]"))

    def _refuse_host(self) -> None:
        host = self.headers.get("Host")
        if host is None:
            what = "no Host header (HTTP/1.0 clients too must send one)"
        else:
            what = f"Host {host.strip()!r} is not this machine (DNS rebinding refused)"
        self._send_error_body(403, f"{what}; send Host: localhost or 127.0.0.1")

    def _has_body(self) -> bool:
        length = self.headers.get("Content-Length")
        return "Transfer-Encoding" in self.headers or length not in (None, "0")

    def _admitted(self) -> bool:
        """The Host and the token; a refusal closes the connection (a body left unread
        would otherwise be read as the next request on it), and so does a GET's body."""
        asked = self.close_connection  # what the request's own headers said
        asked |= self.command != "POST" and self._has_body()
        self.close_connection = True  # until the request is admitted
        if not self._host_ok():
            self._refuse_host()
            return False
        given = self.headers.get("Authorization") or ""
        scheme, _, token = given.partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(
            token.strip().encode(), self.endpoint.token.encode()
        ):
            self._send_error_body(
                401, "missing or wrong bearer token (see `wikimem-watch status`: http token)"
            )
            return False
        self.close_connection = asked
        return True

    def _body(self) -> bytes | None:
        """The POST's body, framed by exactly one Content-Length: a Transfer-Encoding beside
        it, or a second one, would have another reader take other bytes for the body."""
        length = self.headers.get("Content-Length")
        framed = len(set(self.headers.get_all("Content-Length", ()))) == 1
        if (
            length is None
            or not (length.isascii() and length.isdigit())
            or not framed
            or "Transfer-Encoding" in self.headers
        ):
            self.close_connection = True
            self._send_error_body(411, "a POST needs one Content-Length (no Transfer-Encoding)")
            return None
        limit = self.endpoint.max_body_bytes
        size = int(length) if len(length) <= 18 else 10**18  # int() refuses 4,300 digits
        if size > limit:
            shown = length if len(length) <= 18 else f"{len(length)} digits' worth of"
            self.close_connection = True  # before the answer, so it says ``Connection: close``
            self._send_error_body(413, f"body of {shown} bytes; at most {limit}")
            self._discard(size)
            return None
        if self._expects_100:
            self.wfile.write(b"HTTP/1.1 100 Continue\r\n\r\n")
        # A body that does not come whole is answered, not dropped: the client learns why.
        try:
            body = self.rfile.read(size)
        except TimeoutError:
            self.close_connection = True
            self._send_error_body(408, f"the body of {size} bytes did not arrive in idle_timeout_s")
            return None
        if len(body) < size:
            self.close_connection = True
            self._send_error_body(400, f"the body ended after {len(body)} of its {size} bytes")
            return None
        return body

    def _discard(self, length: int) -> None:
        """Read and drop a refused body (at most 16× the limit, for at most 2 s), so a client
        still sending it reads the 413 instead of a broken pipe ("lingering close")."""
        budget = min(length, 16 * self.endpoint.max_body_bytes)
        deadline = time.monotonic() + _DISCARD_S
        try:
            while budget > 0 and time.monotonic() < deadline:
                self.connection.settimeout(max(0.01, deadline - time.monotonic()))
                chunk = self.rfile.read1(min(budget, 65536))
                if not chunk:
                    break
                budget -= len(chunk)
        except OSError:
            pass  # the client gave up or went quiet: nothing more to wait for

    # ------------------------------------------------------------------ replies

    def _call(self, method: str, params: Mapping[str, object]) -> object:
        result = dispatch(self.endpoint.service, method, dict(params))
        if self.endpoint.after_reply is not None:
            self.endpoint.after_reply(method)
        return result

    def _error(self, exc: WatchError | ProtocolError) -> None:
        status = 404 if isinstance(exc, NotFound) or exc.code == METHOD_NOT_FOUND else 400
        self._json(status, {"error": {"code": exc.code, "message": exc.message}})

    def _send_error_body(self, status: int, message: str) -> None:
        self._json(status, {"error": {"code": -32000, "message": message}})

    def _json(self, status: int, obj: object) -> None:
        body = json.dumps(obj, ensure_ascii=False, allow_nan=False).encode() + b"\n"
        self._send(status, body, "application/json; charset=utf-8")

    def end_headers(self) -> None:
        if self.close_connection:  # else a client reuses it and finds it gone
            self.send_header("Connection", "close")
        super().end_headers()

    def _cors(self) -> None:
        """``Access-Control-Allow-Origin`` for a listed browser origin, and no other."""
        # ``headers`` is unset when the request line itself was refused (``send_error``).
        origin = self.headers.get("Origin") if hasattr(self, "headers") else None
        if origin and origin in self.endpoint.cors_origins:
            self.send_header("Access-Control-Allow-Origin", origin)
            self.send_header("Vary", "Origin")

    def _send(self, status: int, body: bytes, kind: str) -> None:
        self.send_response(status)
        if status == 401:
            self.send_header("WWW-Authenticate", 'Bearer realm="wikimem-watch"')
        if status == 405:  # only a HEAD of the event stream
            self.send_header("Allow", "GET")
        self._cors()
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        if body and self.command != "HEAD":  # a HEAD is told the length it would get
            self.wfile.write(body)


def _query_param(name: str, value: str) -> object:
    """A ``/v1/query`` parameter as the JSON request would carry it (``explain=true`` is
    ``True``, ``k=3`` is ``3``); the query's own validation judges the value."""
    if name in _LIST_PARAMS:
        return value.split(",")
    if name in _INT_PARAMS:
        return _int(value, name)
    if name in _FLOAT_PARAMS:
        return _float(value, name)
    if name in _BOOL_PARAMS:
        return _BOOLS.get(value.lower(), value)  # anything else is refused, named, by the query
    return value


def _int(value: str, name: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise ProtocolError(INVALID_PARAMS, f"{name}: expected an integer, got {value!r}") from None


def _float(value: str, name: str) -> float:
    try:
        return float(value)
    except ValueError:
        raise ProtocolError(INVALID_PARAMS, f"{name}: expected a number, got {value!r}") from None
