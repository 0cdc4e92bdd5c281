"""The socket's write methods: ``append_diary``, ``upsert_wiki``, ``delete_wiki``,
``journal``, ``subscribe`` and ``unsubscribe`` (docs/protocol.md, ADR-0016).

Thin, like the read methods: validate the params' shapes and call the daemon's
:class:`VaultWriter` (the one write implementation), the journal reader or the change feed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from ..errors import BadRequest, ConfigError
from ..retrieval.request import vault_paths
from .journal import parse_cursor, read_journal
from .subscriptions import CURRENT, ChangeFeed
from .vault_writer import VaultWriter

Params = Mapping[str, object]
MAX_JOURNAL_LIMIT = 10_000


def _only(params: Params, allowed: tuple[str, ...]) -> None:
    unknown = sorted(set(params) - set(allowed))
    if unknown:
        raise BadRequest(f"unknown param(s) {', '.join(unknown)}; expected {', '.join(allowed)}")


def _opt_str(params: Params, name: str) -> str | None:
    value = params.get(name)
    if value is None:
        return None
    if not isinstance(value, str):
        raise BadRequest(f'"{name}" must be a string, got {value!r}')
    return value


def _list(params: Params, name: str, allowed: tuple[str, ...] = ()) -> tuple[str, ...]:
    value = params.get(name)
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise BadRequest(f'"{name}" must be a list of non-empty strings, got {value!r}')
    bad = [v for v in value if allowed and v not in allowed]
    if bad:
        raise BadRequest(f'"{name}": {bad[0]!r} is not one of {", ".join(allowed)}')
    return tuple(value)


def _writer(service: object) -> VaultWriter:
    writer = getattr(service, "writer", None)
    if not isinstance(writer, VaultWriter):
        raise ConfigError("this daemon does not accept writes")
    return writer


def _feed(service: object) -> ChangeFeed:
    feed = getattr(service, "feed", None)
    if not isinstance(feed, ChangeFeed):
        raise ConfigError("this daemon has no change feed")
    return feed


def m_append_diary(service: object, params: Params) -> object:
    _only(params, ("text", "date", "time", "ts", "tz", "owner", "source"))
    return _writer(service).append_diary(
        params.get("text"),
        date=_opt_str(params, "date"),
        time=_opt_str(params, "time"),
        ts=_opt_str(params, "ts"),
        tz=_opt_str(params, "tz"),
        owner=_opt_str(params, "owner"),
        source=_opt_str(params, "source"),
    )


def m_upsert_wiki(service: object, params: Params) -> object:
    _only(params, ("file", "name", "text", "owner", "source", "ts"))
    return _writer(service).upsert_wiki(
        params.get("file"),
        params.get("name"),
        params.get("text"),
        owner=_opt_str(params, "owner"),
        source=_opt_str(params, "source"),
        ts=_opt_str(params, "ts"),
    )


def m_delete_wiki(service: object, params: Params) -> object:
    _only(params, ("file", "name", "owner", "source"))
    return _writer(service).delete_wiki(
        params.get("file"),
        params.get("name"),
        owner=_opt_str(params, "owner"),
        source=_opt_str(params, "source"),
    )


def m_journal(service: object, params: Params) -> object:
    _only(params, ("since", "limit"))
    since, limit = params.get("since"), params.get("limit", 100)
    if since is not None and (not isinstance(since, int | str) or parse_cursor(since) is None):
        raise BadRequest(
            f'"since" must be a "cursor" from a reply (such as "2214:6f1c0a9e3b7d5248", or '
            f"an integer >= 0), got {since!r}"
        )
    if type(limit) is not int or not 1 <= limit <= MAX_JOURNAL_LIMIT:
        raise BadRequest(f'"limit" must be an integer in [1, {MAX_JOURNAL_LIMIT}], got {limit!r}')
    return read_journal(_writer(service).root, since, limit)


def m_subscribe(service: object, params: Params) -> object:
    _only(params, ("paths", "kinds", "q"))
    peer = getattr(CURRENT, "peer", None)
    if peer is None:
        raise BadRequest("subscribe needs a socket connection (over HTTP: GET /v1/changes)")
    q = _opt_str(params, "q")
    paths = vault_paths(_list(params, "paths"))  # "./diary" and "." read as query reads them
    kinds = _list(params, "kinds", ("diary", "wiki"))
    sub_id, generation = _feed(service).subscribe(peer, paths, kinds, q)
    return {"subscription": sub_id, "generation": generation}


def m_unsubscribe(service: object, params: Params) -> object:
    _only(params, ("subscription",))
    sub_id = params.get("subscription")
    if not isinstance(sub_id, str):
        raise BadRequest(f'"subscription" must be the id subscribe returned, got {sub_id!r}')
    peer = getattr(CURRENT, "peer", None)
    return {"unsubscribed": peer is not None and _feed(service).unsubscribe(peer, sub_id)}


WRITE_METHODS: dict[str, Callable[[object, Params], object]] = {
    "append_diary": m_append_diary,
    "upsert_wiki": m_upsert_wiki,
    "delete_wiki": m_delete_wiki,
    "journal": m_journal,
    "subscribe": m_subscribe,
    "unsubscribe": m_unsubscribe,
}
