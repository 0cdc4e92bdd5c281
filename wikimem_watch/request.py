"""The query request: one validated shape for the CLI, the socket and the Python API."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date, datetime

from .errors import BadRequest

KINDS = ("diary", "wiki")
WEIGHT_KEYS = ("bm25", "vector", "recency", "previous")


@dataclass(frozen=True, slots=True)
class QueryRequest:
    """A validated query. Every field but ``q`` is optional (see docs/protocol.md)."""

    q: str
    k: int = 10
    kinds: tuple[str, ...] = KINDS
    paths: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    time_range: tuple[date, date] | str | None = None
    now: datetime | None = None
    tz: str | None = None
    parse_time: bool = True
    expand_links: bool = True
    budget_tokens: int | None = None
    explain: bool = False
    weights: Mapping[str, float] | None = None
    half_life_days: float | None = None

    @classmethod
    def from_dict(cls, data: object) -> QueryRequest:
        """Validate a JSON object; raises :class:`BadRequest` naming the bad field."""
        if not isinstance(data, Mapping):
            raise BadRequest(f"a query must be a JSON object, got {type(data).__name__}")
        unknown = set(data) - set(cls.__dataclass_fields__)
        if unknown:
            raise BadRequest(f"unknown query field(s): {', '.join(sorted(unknown))}")
        q = data.get("q")
        if not isinstance(q, str):
            raise BadRequest(f'"q" must be a string, got {q!r}')
        return cls(
            q=q,
            k=_int(data, "k", 10, lo=1, hi=1000),
            kinds=_kinds(data.get("kinds")),
            paths=_strs(data, "paths"),
            tags=tuple(t.lstrip("#") for t in _strs(data, "tags")),
            time_range=parse_time_range_field(data.get("time_range")),
            now=_now(data.get("now")),
            tz=_opt_str(data, "tz"),
            parse_time=_bool(data, "parse_time", True),
            expand_links=_bool(data, "expand_links", True),
            budget_tokens=_opt_int(data, "budget_tokens"),
            explain=_bool(data, "explain", False),
            weights=_weights(data.get("weights")),
            half_life_days=_opt_pos_float(data, "half_life_days"),
        )


def parse_date(value: object, field: str) -> date:
    if not isinstance(value, str):
        raise BadRequest(f"{field}: expected a date 'YYYY-MM-DD', got {value!r}")
    try:
        return date.fromisoformat(value.strip()[:10])
    except ValueError:
        raise BadRequest(f"{field}: {value!r} is not a date; expected 'YYYY-MM-DD'") from None


def parse_time_range_field(value: object) -> tuple[date, date] | str | None:
    """``[start, end]`` dates (inclusive), ``"START..END"``, or a time expression string."""
    if value is None:
        return None
    if isinstance(value, str):
        if ".." in value:
            start, _, end = value.partition("..")
            return _pair(parse_date(start, "time_range"), parse_date(end, "time_range"))
        if not value.strip():
            raise BadRequest("time_range: empty string; give [start, end] or an expression")
        return value
    if isinstance(value, list | tuple) and len(value) == 2:
        return _pair(parse_date(value[0], "time_range"), parse_date(value[1], "time_range"))
    raise BadRequest(
        f"time_range: expected [start, end] dates, 'START..END' or an expression, got {value!r}"
    )


def _pair(start: date, end: date) -> tuple[date, date]:
    if start > end:
        raise BadRequest(f"time_range: start {start} is after end {end}")
    return start, end


def _now(value: object) -> datetime | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise BadRequest(f"now: expected an ISO-8601 date-time string, got {value!r}")
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise BadRequest(f"now: {value!r} is not ISO-8601 (e.g. 2026-07-24T15:00)") from None


def _int(data: Mapping[str, object], key: str, default: int, lo: int, hi: int) -> int:
    value = data.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise BadRequest(f"{key}: expected an integer in [{lo}, {hi}], got {value!r}")
    return value


def _opt_int(data: Mapping[str, object], key: str) -> int | None:
    value = data.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise BadRequest(f"{key}: expected a positive integer, got {value!r}")
    return value


def _opt_pos_float(data: Mapping[str, object], key: str) -> float | None:
    value = data.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise BadRequest(f"{key}: expected a positive number, got {value!r}")
    return float(value)


def _bool(data: Mapping[str, object], key: str, default: bool) -> bool:
    value = data.get(key, default)
    if not isinstance(value, bool):
        raise BadRequest(f"{key}: expected true or false, got {value!r}")
    return value


def _opt_str(data: Mapping[str, object], key: str) -> str | None:
    value = data.get(key)
    if value is not None and not isinstance(value, str):
        raise BadRequest(f"{key}: expected a string, got {value!r}")
    return value


def _strs(data: Mapping[str, object], key: str) -> tuple[str, ...]:
    value = data.get(key)
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return tuple(value)
    raise BadRequest(f"{key}: expected a string or a list of strings, got {value!r}")


def _kinds(value: object) -> tuple[str, ...]:
    if value is None:
        return KINDS
    kinds = (value,) if isinstance(value, str) else value
    if not isinstance(kinds, list | tuple) or not kinds or not all(k in KINDS for k in kinds):
        raise BadRequest(f"kinds: expected a list drawn from {list(KINDS)}, got {value!r}")
    return tuple(kinds)


def _weights(value: object) -> dict[str, float] | None:
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise BadRequest(
            f"weights: expected an object like {{'bm25': 1, 'recency': 0.1}}, got {value!r}"
        )
    out: dict[str, float] = {}
    for key, w in value.items():
        if key not in WEIGHT_KEYS:
            raise BadRequest(
                f"weights: unknown signal {key!r}; expected one of {', '.join(WEIGHT_KEYS)}"
            )
        if isinstance(w, bool) or not isinstance(w, int | float) or w < 0:
            raise BadRequest(f"weights.{key}: expected a number >= 0, got {w!r}")
        out[key] = float(w)
    if out.get("bm25", 1.0) <= 0:
        raise BadRequest("weights.bm25 must be > 0: BM25 is never switched off")
    return out
