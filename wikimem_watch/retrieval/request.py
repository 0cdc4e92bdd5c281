"""The query request: one validated shape for the CLI, the socket and the Python API.

Every number is checked here, at the edge: a type, a finite value (JSON from Python may
carry ``NaN`` and ``Infinity``, which would poison the score fusion) and a range. A bad
field is a :class:`BadRequest` (``-32602``) naming the field and the expected shape.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date, datetime, time

from ..errors import BadRequest, require_text

TYPE_CHECKING = False  # the client path imports this module: `typing` costs it milliseconds
if TYPE_CHECKING:
    from ..timeparse import TimeWindow

KINDS = ("diary", "wiki")
WEIGHT_KEYS = ("bm25", "vector", "recency", "previous", "question", "information")
MAX_K = 1000
MAX_BUDGET_TOKENS = 10_000_000
MAX_HALF_LIFE_DAYS = 365_000.0  # a thousand years: longer is "no decay", say so with weight 0
MAX_WEIGHT = 1_000_000.0
MAX_TEXT_CHARS = 100_000  # q, tz and time expressions: a question, not a document


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
        if q is None:
            raise BadRequest('q is required: the query text, e.g. {"q": "dentist", "k": 3}')
        if not isinstance(q, str):
            raise BadRequest(f'"q" must be a string, got {_short(q)}')
        if len(q) > MAX_TEXT_CHARS:
            raise BadRequest(f'"q" is {len(q)} characters; at most {MAX_TEXT_CHARS} are accepted')
        return cls(
            q=require_text(q, "q"),
            k=_int(data, "k", 10, lo=1, hi=MAX_K),
            kinds=_kinds(data.get("kinds")),
            paths=vault_paths(_strs(data, "paths")),
            tags=_tags(_strs(data, "tags")),
            time_range=parse_time_range_field(data.get("time_range")),
            now=_now(data.get("now")),
            tz=_zone(_opt_str(data, "tz")),
            parse_time=_bool(data, "parse_time", True),
            expand_links=_bool(data, "expand_links", True),
            budget_tokens=_opt_int(data, "budget_tokens", hi=MAX_BUDGET_TOKENS),
            explain=_bool(data, "explain", False),
            weights=_weights(data.get("weights")),
            half_life_days=_opt_pos_float(data, "half_life_days", hi=MAX_HALF_LIFE_DAYS),
        )


def _tags(given: tuple[str, ...]) -> tuple[str, ...]:
    """Tag names without their ``#`` or a trailing ``/`` (``plants/`` is ``plants`` and what
    is nested in it, as ``plants`` is); an empty one is refused (it would match nothing and
    empty every result without a word)."""
    tags = tuple(t.strip().lstrip("#").rstrip("/") for t in given)
    if any(not t for t in tags):
        raise BadRequest(f'"tags" holds an empty tag name: {_short(list(given))}')
    return tags


def vault_paths(given: tuple[str, ...]) -> tuple[str, ...]:
    """Vault-relative folders, files or globs as the index names them, for ``query`` and
    ``subscribe`` alike: ``./diary``, ``/diary`` and ``diary\\`` are ``diary``; ``.`` is the
    whole vault (no filter). An empty one, or one with a ``..``, is refused: it would match
    nothing and empty every result."""
    if any(not raw.strip() for raw in given):
        raise BadRequest(f'"paths" holds an empty path: {_short(list(given))}')
    paths: list[str] = []
    for raw in given:
        path = raw.strip().replace("\\", "/")
        while path.startswith(("./", "/")):
            path = path[1:] if path.startswith("/") else path[2:]
        if path in ("", "."):
            return ()  # the vault itself: every path passes
        if ".." in path.split("/"):  # it matched nothing and answered "no results"
            raise BadRequest(f'"paths" entry {raw!r} leads outside the vault; give folders in it')
        paths.append(path)
    return tuple(paths)


def _zone(name: str | None) -> str | None:
    """A time zone name the system knows (checked here: a bad one is refused like any
    other field, before anything is read; an empty one too: it read as the local zone,
    where ``parse-time`` and the writes refuse it)."""
    if name is not None:
        from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

        try:
            ZoneInfo(name)
        except (ZoneInfoNotFoundError, ValueError):
            raise BadRequest(
                f"tz: unknown time zone {_short(name)} (e.g. 'Asia/Shanghai')"
            ) from None
    return name


ISO_DAY = re.compile("[0-9]{4}-[0-9]{2}-[0-9]{2}")  # the one date form requests take


def parse_date(value: object, field: str) -> date:
    """A whole ISO date, or the day of a whole ISO date-time ("2026-11-01T10:00"); anything
    else is refused, never read by its first ten characters ("2026-11-0199" is no date)."""
    if not isinstance(value, str):
        raise BadRequest(f"{field}: expected a date 'YYYY-MM-DD', got {_short(value)}")
    text = value.strip()
    try:
        if ISO_DAY.fullmatch(text[:10]):  # not 2026-W29-1, fromisoformat's week date
            if len(text) == 10:
                return date.fromisoformat(text)
            if text[10] in "T ":
                return datetime.fromisoformat(text.replace("Z", "+00:00")).date()
    except ValueError:
        pass
    raise BadRequest(f"{field}: {_short(value)} is not a date; expected 'YYYY-MM-DD'")


def parse_time_range_field(value: object) -> tuple[date, date] | str | None:
    """``[start, end]`` dates (inclusive), ``"START..END"``, or a time expression string."""
    if value is None:
        return None
    if isinstance(value, str):
        require_text(value, "time_range")
        if ".." in value:
            start, _, end = value.partition("..")
            if ".." in end:
                raise BadRequest(f"time_range: expected START..END, got {_short(value)}")
            return _pair(parse_date(start, "time_range"), parse_date(end, "time_range"))
        if not value.strip():
            raise BadRequest("time_range: empty string; give [start, end] or an expression")
        if len(value) > MAX_TEXT_CHARS:
            raise BadRequest(f"time_range: an expression of at most {MAX_TEXT_CHARS} characters")
        return value
    if isinstance(value, list | tuple) and len(value) == 2:
        return _pair(parse_date(value[0], "time_range"), parse_date(value[1], "time_range"))
    raise BadRequest(
        "time_range: expected [start, end] dates, 'START..END' or an expression, "
        f"got {_short(value)}"
    )


def time_range_window(expression: str, now: datetime) -> TimeWindow:
    """The window a ``time_range`` expression opens at ``now`` (naive, local); a
    :class:`BadRequest` when it names no date or time."""
    from ..timeparse import parse_time_range  # only for an expression: the request stays cheap

    found = parse_time_range(expression, now=now)
    if found is None:
        raise BadRequest(f"time_range: no date or time expression in {_short(expression)}")
    return found


def check_request(data: object) -> QueryRequest:
    """``QueryRequest.from_dict``, and a ``time_range`` expression read at the request's
    ``now``: what a request is refused for, found without an engine or a daemon."""
    req = QueryRequest.from_dict(data)
    if isinstance(req.time_range, str):
        time_range_window(req.time_range, (req.now or datetime.now()).replace(tzinfo=None))
    return req


def _pair(start: date, end: date) -> tuple[date, date]:
    if start > end:
        raise BadRequest(f"time_range: start {start} is after end {end}")
    return start, end


def _now(value: object) -> datetime | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise BadRequest(f"now: expected an ISO-8601 date-time string, got {_short(value)}")
    try:
        return read_now(value)
    except ValueError:
        raise BadRequest(f"now: {_short(value)} is not ISO-8601 (e.g. 2026-07-24T15:00)") from None


def read_now(text: str) -> datetime:
    """An ISO-8601 ``now``; a bare date is the end of that day ("as of 2026-11-29": its
    entries happened before it; midnight left them all in the future, and "today" widened
    into the day before). ValueError when it is no ISO-8601 date or date-time."""
    moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    if "T" not in text.upper() and " " not in text.strip():  # 2026-11-29, 20261129, 2026-W48-7
        moment = datetime.combine(moment.date(), time(23, 59, 59))
    return moment


def _short(value: object, limit: int = 80) -> str:
    """``repr`` of a bad value, cut so an error message never echoes a megabyte back."""
    text = repr(value)
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text)} chars)"


short_repr = _short  # for the checks made later, on the request's values (gate.py)


def _is_number(value: object) -> bool:
    return not isinstance(value, bool) and isinstance(value, int | float)


def _int(data: Mapping[str, object], key: str, default: int, lo: int, hi: int) -> int:
    value = data.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise BadRequest(f"{key}: expected an integer in [{lo}, {hi}], got {_short(value)}")
    return value


def _opt_int(data: Mapping[str, object], key: str, hi: int) -> int | None:
    value = data.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= hi:
        raise BadRequest(f"{key}: expected an integer in [1, {hi}], got {_short(value)}")
    return value


def finite_number(value: object, field: str, lo: float, hi: float, *, lo_open: bool) -> float:
    """``value`` as a float in ``(lo, hi]`` (``lo_open``) or ``[lo, hi]``; NaN and ±inf are
    refused by name: JSON has no such numbers and they would poison every score."""
    low = "(" if lo_open else "["
    shape = f"a finite number in {low}{lo:g}, {hi:g}]"
    if not _is_number(value):
        raise BadRequest(f"{field}: expected {shape}, got {_short(value)}")
    number = float(value)  # type: ignore[arg-type]  # _is_number checked int | float
    if not math.isfinite(number):
        raise BadRequest(f"{field}: expected {shape}, got {number!r} (NaN/Infinity are refused)")
    if number < lo or (lo_open and number == lo) or number > hi:
        raise BadRequest(f"{field}: expected {shape}, got {_short(value)}")
    return number


def _opt_pos_float(data: Mapping[str, object], key: str, hi: float) -> float | None:
    value = data.get(key)
    if value is None:
        return None
    return finite_number(value, key, 0.0, hi, lo_open=True)


def _bool(data: Mapping[str, object], key: str, default: bool) -> bool:
    value = data.get(key, default)
    if not isinstance(value, bool):
        raise BadRequest(f"{key}: expected true or false, got {_short(value)}")
    return value


def _opt_str(data: Mapping[str, object], key: str) -> str | None:
    value = data.get(key)
    if value is not None and not isinstance(value, str):
        raise BadRequest(f"{key}: expected a string, got {_short(value)}")
    return value if value is None else require_text(value, key)


def _strs(data: Mapping[str, object], key: str) -> tuple[str, ...]:
    value = data.get(key)
    if value is None:
        return ()
    if isinstance(value, str):
        return (require_text(value, key),)
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return tuple(require_text(v, key) for v in value)
    raise BadRequest(f"{key}: expected a string or a list of strings, got {_short(value)}")


def _kinds(value: object) -> tuple[str, ...]:
    if value is None:
        return KINDS
    kinds = (value,) if isinstance(value, str) else value
    if not isinstance(kinds, list | tuple) or not kinds or not all(k in KINDS for k in kinds):
        raise BadRequest(f"kinds: expected a list drawn from {list(KINDS)}, got {_short(value)}")
    return tuple(dict.fromkeys(kinds))  # a kind named twice is one kind


def _weights(value: object) -> dict[str, float] | None:
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise BadRequest(
            f"weights: expected an object like {{'bm25': 1, 'recency': 0.1}}, got {_short(value)}"
        )
    out: dict[str, float] = {}
    for key, w in value.items():
        if key not in WEIGHT_KEYS:
            raise BadRequest(
                f"weights: unknown signal {_short(key)}; expected one of {', '.join(WEIGHT_KEYS)}"
            )
        out[key] = finite_number(w, f"weights.{key}", 0.0, MAX_WEIGHT, lo_open=False)
    if out.get("bm25", 1.0) <= 0:
        raise BadRequest("weights.bm25 must be > 0: BM25 is never switched off")
    return out
