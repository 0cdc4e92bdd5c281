"""The socket's method table: validate params, call the engine or the daemon, shape results.

Each method takes the :class:`Service` (the running daemon) and the request's named params
and returns a JSON-ready object. There is no retrieval logic here: ``query`` is exactly
``run_query``, and the read methods only reshape what the engine holds. Every name in
``METHODS`` is documented in docs/protocol.md (tests/test_docs.py checks it).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from datetime import date
from typing import TYPE_CHECKING, Protocol

from .. import __version__
from ..core.engine import Engine
from ..core.models import Entry
from ..core.notepath import resolve_note_path
from ..errors import BadRequest
from ..retrieval.request import ISO_DAY
from .protocol import METHOD_NOT_FOUND, PROTOCOL_VERSION, ProtocolError
from .write_methods import WRITE_METHODS

if TYPE_CHECKING:
    from ..retrieval.query import VectorSignal

Params = Mapping[str, object]


class Service(Protocol):
    """What the daemon offers the methods (a fake in tests)."""

    engine: Engine

    def status(self) -> dict[str, object]:
        """The ``status`` result."""

    def reindex(self, dry_run: bool = False) -> dict[str, object]:
        """Run a full rescan on the writer thread and return its stats (with ``dry_run``:
        what it would change, applying nothing)."""

    def request_stop(self) -> None:
        """Begin a clean shutdown (after the current reply is sent)."""

    def vector_signal(self) -> VectorSignal | None:
        """The optional embeddings component, or None (BM25 only)."""

    def embed(self, rebuild: bool) -> dict[str, object]:
        """Start embedding what the vector cache lacks (all of it with ``rebuild``)."""


def _only(params: Params, allowed: tuple[str, ...]) -> None:
    unknown = sorted(set(params) - set(allowed))
    if unknown:
        expected = ", ".join(allowed) if allowed else "no params"
        raise BadRequest(f"unknown param(s) {', '.join(unknown)}; expected {expected}")


def _str(params: Params, name: str, required: bool = True) -> str | None:
    value = params.get(name)
    if value is None and not required:
        return None
    if not isinstance(value, str) or not value:
        raise BadRequest(f'"{name}" must be a non-empty string, got {value!r}')
    return value


def _day(params: Params, name: str, required: bool = True) -> str | None:
    value = _str(params, name, required)
    if value is None:
        return None
    try:
        if ISO_DAY.fullmatch(value):  # not fromisoformat's other forms: 20260721, 2026-W29-1
            return date.fromisoformat(value).isoformat()
    except ValueError:
        pass
    raise BadRequest(f'"{name}" must be a date like 2026-07-21, got {value!r}')


def _bool(params: Params, name: str) -> bool:
    value = params.get(name, False)
    if not isinstance(value, bool):
        raise BadRequest(f'"{name}" must be true or false, got {value!r}')
    return value


def _path(service: Service, params: Params) -> str:
    """The indexed note the ``path`` param names, read as a person types it (notepath)."""
    value = _str(params, "path")
    assert value is not None
    return resolve_note_path(service.engine, value)


def _ref(entry: Entry) -> dict[str, object]:
    return {"id": entry.id, "path": entry.path, "heading": entry.heading, "line": entry.line}


def m_hello(service: Service, params: Params) -> object:
    return {
        "name": "wikimem-watch",
        "protocol": PROTOCOL_VERSION,
        "version": __version__,
        "capabilities": sorted(METHODS),
        "batch": False,
        "vault": str(service.engine.config.vault),  # a client that named a socket checks it
    }


def m_status(service: Service, params: Params) -> object:
    _only(params, ())
    return service.status()


def m_query(service: Service, params: Params) -> object:
    # Here, not at the top: a daemon is ready ~10 ms sooner without the query path (and the
    # time parser), which its writer thread loads right after (``service.warm_query_path``).
    from ..retrieval.query import run_query
    from ..retrieval.request import QueryRequest

    return run_query(service.engine, QueryRequest.from_dict(params), service.vector_signal())


def m_days(service: Service, params: Params) -> object:
    _only(params, ("start", "end"))
    start, end = _day(params, "start", False), _day(params, "end", False)
    if start is not None and end is not None and start > end:
        raise BadRequest(f"start {start} is after end {end}")
    counts = service.engine.day_counts(start, end)
    return {"days": [{"date": d, "entries": n} for d, n in counts]}


def m_day(service: Service, params: Params) -> object:
    _only(params, ("date",))
    day = _day(params, "date")
    assert day is not None
    return {"date": day, "entries": [e.as_dict() for e in service.engine.entries_on(day)]}


def m_note(service: Service, params: Params) -> object:
    _only(params, ("path",))
    path = _path(service, params)
    return {"path": path, "entries": [e.as_dict() for e in service.engine.entries_of(path)]}


def m_links(service: Service, params: Params) -> object:
    _only(params, ("path",))
    path = _path(service, params)
    engine = service.engine
    out: list[dict[str, object]] = []
    with engine.lock:
        for entry in engine.entries_of(path):
            for link in entry.links:
                targets = engine.resolve(link)
                out.append(
                    {
                        "from": entry.id,
                        "line": entry.line,
                        "target": link.target,
                        "heading": link.heading,
                        "alias": link.alias,
                        "embed": link.embed,
                        "style": link.style,
                        "resolved": [_ref(t) for t in targets],
                        "attachment": link.attachment,
                        "unresolved": not link.attachment and engine.resolve_note(link) is None,
                    }
                )
    return {"path": path, "links": out}


def m_backlinks(service: Service, params: Params) -> object:
    _only(params, ("path",))
    path = _path(service, params)
    found = service.engine.backlinks(path)
    return {
        "path": path,
        "backlinks": [{**_ref(e), "target": link.target} for e, link in found],
    }


def m_file_digests(service: Service, params: Params) -> object:
    _only(params, ())
    engine = service.engine
    with engine.lock:
        return {
            "digest": engine.digest(),
            "generation": engine.generation,
            "files": engine.file_digests(),
            "skipped": engine.left_out(),  # as ``status`` lists it; ``check`` compares it
            "notes": _note_selection(engine),
        }


def _note_selection(engine: Engine) -> dict[str, object]:
    """Which files the daemon takes for notes (its flags and environment, not the caller's):
    ``check`` scans with the same, or it would call every file it leaves out missing."""
    config = engine.config
    return {
        "include": list(config.include),
        "exclude": list(config.exclude),
        "follow_external_symlinks": config.follow_external_symlinks,
    }


def m_reindex(service: Service, params: Params) -> object:
    _only(params, ("dry_run",))
    return service.reindex(dry_run=_bool(params, "dry_run"))


def m_embed(service: Service, params: Params) -> object:
    _only(params, ("rebuild",))
    return service.embed(_bool(params, "rebuild"))


def m_shutdown(service: Service, params: Params) -> object:
    _only(params, ())
    return {"stopping": True, "pid": os.getpid()}


Method = Callable[[Service, Params], object]

METHODS: dict[str, Method] = {
    "hello": m_hello,
    "status": m_status,
    "query": m_query,
    "days": m_days,
    "day": m_day,
    "note": m_note,
    "links": m_links,
    "backlinks": m_backlinks,
    "file_digests": m_file_digests,
    "reindex": m_reindex,
    "embed": m_embed,
    "shutdown": m_shutdown,
    **WRITE_METHODS,  # append_diary, upsert_wiki, delete_wiki, journal, (un)subscribe
}

STOP_AFTER_REPLY = frozenset({"shutdown"})


def dispatch(service: Service, method: str, params: Params) -> object:
    """Run ``method``; raises ProtocolError (-32601) for an unknown name."""
    handler = METHODS.get(method)
    if handler is None:
        known = ", ".join(sorted(METHODS))
        raise ProtocolError(METHOD_NOT_FOUND, f"method {method!r} not found; known: {known}")
    return handler(service, params)
