"""The time gate: which diary window a query is about, clamped to ``now`` (ADR-0006, ADR-0009).

A window comes from the request (``time_range``: *explicit*) or from the time words in ``q``
(*parsed*). It never reaches past ``now``: a diary entry written later than the moment the
question is asked cannot be what it is about. A window that holds no diary entries widens
(±1, then ±3 days, still clamped); a parsed window that stays empty is not applied and says
so (``fallback: "empty"``). Pure over the engine's read side; the caller holds its lock.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, replace
from datetime import date, datetime, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from ..core.engine import Engine
from ..core.models import Entry
from ..core.vault import glob_match
from ..errors import BadRequest
from ..timeparse import find_session, is_time_only, parse_time_range
from .request import QueryRequest, short_repr, time_range_window

WIDEN_STEPS_DAYS = (1, 3)
# A matched time expression that names a calendar date: a year, a month name, M月 or 十月.
_ABSOLUTE = re.compile(
    r"\d{4}|[\d一二三四五六七八九十]+\s*月|\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\b",
    re.I,
)


@dataclass(frozen=True, slots=True)
class Gate:
    """The diary window a query is filtered by, where it came from, and the ``now`` limit."""

    start: date
    end: date
    source: str  # "explicit" | "parsed"
    start_time: str | None = None
    end_time: str | None = None
    matched: str | None = None
    widened: int = 0  # days added on each side
    fallback: str | None = None  # why a parsed window was not applied: "empty"
    limit_day: date | None = None  # `now`: no entry after this day and time is inside
    limit_time: str | None = None
    entries: int = 0  # diary entries the window holds (after the request's filters)
    # "first" / "last": the window is that conversation's day, found in the vault by
    # ``settle`` (timeparse/sessions.py); until then start and end are placeholders
    session: str | None = None

    def contains(self, entry: Entry) -> bool:
        """True for a diary entry inside the window (an undated entry is never inside)."""
        return self.contains_at(entry.date, entry.time)

    def contains_at(self, day: str | None, hhmm: str | None) -> bool:
        """``contains`` for an entry of that date and time."""
        if day is None:
            return False
        d = date.fromisoformat(day)
        if not self.start <= d <= self.end or self.after_now(d, hhmm):
            return False
        if self.start_time and hhmm and self.start == self.end and not self.widened:
            return self.start_time <= hhmm <= (self.end_time or "23:59")
        return True

    def after_now(self, day: date, hhmm: str | None) -> bool:
        if self.limit_day is None or day < self.limit_day:
            return False
        if day > self.limit_day:
            return True
        return bool(hhmm and self.limit_time and hhmm > self.limit_time)

    def widen(self, days: int) -> Gate:
        """``days`` more on each side, never past ``now``'s day; whole days (a widened
        "this morning" is the days around it, not their mornings)."""
        end = self.end + timedelta(days) if self.end < date.max - timedelta(days) else date.max
        if self.limit_day is not None:
            end = min(end, self.limit_day)
        start = (
            self.start - timedelta(days) if self.start > date.min + timedelta(days) else date.min
        )
        return replace(self, start=start, end=end, widened=days, start_time=None, end_time=None)

    def as_dict(self) -> dict[str, object]:
        return {
            "start": self.start.isoformat(),
            "end": self.end.isoformat(),
            "start_time": self.start_time,
            "end_time": self.end_time,
            "source": self.source,
            "matched": self.matched,
            "widened_days": self.widened,
            "fallback": self.fallback,
            "entries": self.entries,
            "session": self.session,
        }


def local_now(req: QueryRequest) -> datetime:
    """The request's reference time in its zone (default: the current local time)."""
    zone = None
    if req.tz:
        try:
            zone = ZoneInfo(req.tz)
        except (ZoneInfoNotFoundError, ValueError):
            raise BadRequest(
                f"tz: unknown time zone {short_repr(req.tz)} (e.g. 'Asia/Shanghai')"
            ) from None
    now = req.now or datetime.now().astimezone()
    if zone is not None:
        try:
            now = now.astimezone(zone) if now.tzinfo else now.replace(tzinfo=zone)
        except OverflowError:  # 0001-01-01T00:00+14:00 is still year 0 in UTC
            raise BadRequest(
                f"now: {now.isoformat()} in {req.tz} falls outside the years 1-9999"
            ) from None
    return now


def resolve_gate(req: QueryRequest, now: datetime) -> tuple[Gate | None, str, bool]:
    """(window, text left for BM25, time-only?) for a request."""
    naive = now.replace(tzinfo=None)
    limit_day, limit_time = naive.date(), naive.strftime("%H:%M")
    if isinstance(req.time_range, tuple):
        start, end = req.time_range
        gate = Gate(start, end, "explicit", limit_day=limit_day, limit_time=limit_time)
        return gate, _without_time_words(req, naive), is_time_only(req.q)
    if isinstance(req.time_range, str):
        given = time_range_window(req.time_range, naive)
        gate = Gate(
            given.start,
            given.end,
            "explicit",
            _hhmm(given.start_time),
            _hhmm(given.end_time),
            given.matched,
            limit_day=limit_day,
            limit_time=limit_time,
        )
        return gate, _without_time_words(req, naive), is_time_only(req.q)
    if not req.parse_time:
        return None, req.q, False
    found = parse_time_range(req.q, now=naive)
    if found is None:
        session = find_session(req.q)
        if session is None:
            return None, req.q, False
        gate = Gate(
            limit_day,
            limit_day,
            "parsed",
            matched=session.matched,
            limit_day=limit_day,
            limit_time=limit_time,
            session=session.which,
        )
        return gate, session.rest, session.time_only
    if not _ABSOLUTE.search(found.matched):
        # "last week, as mentioned on 6 November 2023": a calendar date in the same question
        # is a firmer anchor than a relative word resolved against `now`.
        second = parse_time_range(found.rest, now=naive)
        if second is not None and _ABSOLUTE.search(second.matched):
            found = second
    gate = Gate(
        found.start,
        found.end,
        "parsed",
        _hhmm(found.start_time),
        _hhmm(found.end_time),
        found.matched,
        limit_day=limit_day,
        limit_time=limit_time,
    )
    return gate, found.rest, found.time_only


def _without_time_words(req: QueryRequest, now: datetime) -> str:
    """The text BM25 scores under an explicit window: the question without the time words
    it holds ("coffee yesterday" with a ``time_range``: the window is the explicit one, and
    "yesterday" is no more a word to match than without it). "what did we talk about" is
    listed by ``is_time_only`` as before."""
    if not req.parse_time:
        return req.q
    found = parse_time_range(req.q, now=now)
    return req.q if found is None else found.rest


def _hhmm(value: object) -> str | None:
    return value.strftime("%H:%M") if hasattr(value, "strftime") else None


def passes(req: QueryRequest, entry: Entry) -> bool:
    """True when an entry passes the request's ``kinds``, ``paths`` and ``tags`` filters.

    A tag filter matches nested tags as Obsidian does: ``plants`` matches ``plants/succulents``.
    """
    return passes_fields(req, entry.kind, entry.path, entry.tags)


def passes_slot(req: QueryRequest, engine: Engine, slot: int) -> bool:
    """``passes`` for the entry at ``slot``, read from the store's columns (no ``Entry``)."""
    store = engine.store
    path = store.path[slot]
    assert path is not None
    kind = "wiki" if store.wiki[slot] else "diary"
    return passes_fields(req, kind, path, store.tags_of(slot) if req.tags else ())


def passes_fields(req: QueryRequest, kind: str, path: str, tags: tuple[str, ...]) -> bool:
    if kind not in req.kinds:
        return False
    if req.paths and not glob_match(path, req.paths):
        return False
    return not req.tags or any(tag_matches(want, have) for want in req.tags for have in tags)


def tag_matches(want: str, have: str) -> bool:
    """``have`` is the tag ``want`` or nested in it, case aside and in one Unicode form (a tag
    typed with a decomposed accent, as macOS may write it, is the composed one)."""
    want, have = _tag_key(want), _tag_key(have)
    return have == want or have.startswith(want.rstrip("/") + "/")


def _tag_key(tag: str) -> str:
    return tag.lower() if tag.isascii() else unicodedata.normalize("NFC", tag).lower()


def _bounded(gate: Gate) -> tuple[date, date] | None:
    """The window's days, cut at ``now``; None when it lies wholly after ``now``."""
    if gate.limit_day is not None and gate.start > gate.limit_day:
        return None
    end = min(gate.end, gate.limit_day) if gate.limit_day is not None else gate.end
    return gate.start, end


def window_entries(
    engine: Engine, req: QueryRequest, gate: Gate, limit: int | None = None
) -> list[Entry]:
    """The diary entries inside the window that pass the filters, oldest first (the first
    ``limit`` of them when given)."""
    return [engine.slot_entry(s) for s in window_slots(engine, req, gate, limit)]


def window_slots(
    engine: Engine, req: QueryRequest, gate: Gate, limit: int | None = None
) -> list[int]:
    """``window_entries`` as slots."""
    days = _bounded(gate)
    if days is None:
        return []
    out: list[int] = []
    date_time = engine.store.date_time
    for slot in engine.window_slots(*days):
        if gate.contains_at(*date_time(slot)) and passes_slot(req, engine, slot):
            out.append(slot)
            if limit is not None and len(out) >= limit:
                break
    return out


def count_window(engine: Engine, req: QueryRequest, gate: Gate) -> int:
    """How many diary entries the window holds, from the per-day counts when no filter or
    time of day needs each entry looked at: O(days), not O(entries), for a year's window."""
    days = _bounded(gate)
    if days is None:
        return 0
    exact_times = gate.start_time is not None and gate.start == gate.end and not gate.widened
    if req.paths or req.tags or "diary" not in req.kinds or exact_times:
        return len(window_slots(engine, req, gate))
    total = engine.count_days(*days)
    if gate.limit_day is not None and days[1] == gate.limit_day:  # later today is not in it
        day = gate.limit_day.isoformat()
        minute = engine.store.minute
        hhmm = [engine.store.date_time(s)[1] for s in engine.days.get(day, ()) if minute[s] >= 0]
        total -= sum(1 for t in hhmm if not gate.contains_at(day, t))
    return total


def settle(engine: Engine, req: QueryRequest, gate: Gate) -> Gate:
    """Widen a window that holds no entries (±1, then ±3 days, never past ``now``).

    A parsed window still empty is not applied (``fallback: "empty"``); an explicit one holds.
    A conversation named by its order becomes its day, and is not widened. Nor is a window
    of a request whose ``kinds`` leave out the diary. Returns the window with ``entries``,
    how many it holds.
    """
    if gate.after_now(gate.start, gate.start_time if gate.start == gate.end else None):
        # Wholly after now ("明天", "next week", "今晚" asked at 15:00): the diary holds
        # nothing there yet, and widening would call today's entries tomorrow's.
        return replace(gate, fallback="empty") if gate.source == "parsed" else gate
    if gate.limit_day is not None and gate.end > gate.limit_day:
        gate = replace(gate, end=gate.limit_day)  # "this week", "今年": as far as now
    late = gate.end_time and gate.limit_time and gate.end_time > gate.limit_time
    if late and gate.end == gate.limit_day:
        # "this afternoon" asked at 15:00 holds 12:00-15:00 (``contains_at`` stops at now):
        # reported so, not 12:00-18:00.
        gate = replace(gate, end_time=gate.limit_time)
    if "diary" not in req.kinds:
        # A window selects diary entries, which the request leaves out: widening could find
        # none, and would only report a window of days nobody asked for.
        return replace(gate, fallback="empty") if gate.source == "parsed" else gate
    if gate.session is not None:
        day = _session_day(engine, gate)
        if day is None:
            return replace(gate, fallback="empty")
        g = replace(gate, start=day, end=day)
        held = count_window(engine, req, g)
        return replace(g, entries=held) if held else replace(g, fallback="empty")
    g = gate
    for days in (0, *WIDEN_STEPS_DAYS):
        g = gate.widen(days) if days else gate
        held = count_window(engine, req, g)
        if held:
            return replace(g, entries=held)
    if gate.source == "parsed":
        return replace(g, fallback="empty")
    return g


def _session_day(engine: Engine, gate: Gate) -> date | None:
    """The day of the first conversation in the diary (not after ``now``), or of the last
    one before ``now``'s day (today's is the one going on); None when there is none."""
    limit = (gate.limit_day or date.max).isoformat()
    if gate.session == "first":
        day = min((d for d in engine.days if d <= limit), default=None)
    else:
        day = max((d for d in engine.days if d < limit), default=None)
    return None if day is None else date.fromisoformat(day)
