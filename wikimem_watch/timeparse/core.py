"""The engine: the rule table, the search for the first well-formed expression, and the
public ``parse_time_range``.

Design: a table of (compiled pattern, resolver) rules. The earliest match in the text wins,
ties go to the longest. A resolver that returns ``None`` or raises ``ValueError`` (Feb 30,
an idiom, a vague word) consumes its span, so no substring of it can match afterwards.
"""

from __future__ import annotations

import re
from datetime import date, datetime
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from . import en, resolvers, zh
from .resolvers import Resolver
from .window import Days, TimeWindow

# Tried at every position; the earliest match wins, then the longest, then the first here.
RULES: list[tuple[re.Pattern[str], Resolver]] = [
    (zh.BLOCK, resolvers.blocked),
    (en.BLOCK, resolvers.blocked),
    (en.DATE_RANGE, resolvers.date_range),
    (zh.REL, resolvers.relative_day),
    (en.REL, resolvers.relative_day),
    (zh.AGO, resolvers.ago),
    (en.AGO, resolvers.ago),
    (zh.WEEK, resolvers.relative_period),
    (zh.WEEKDAY, resolvers.bare_weekday),
    (en.PERIOD, resolvers.relative_period),
    (en.WEEKDAY, resolvers.bare_weekday),
    (zh.MONTH, resolvers.relative_period),
    (zh.YEAR_REL, resolvers.relative_period),
    (zh.YMD, resolvers.absolute),
    (zh.MD, resolvers.absolute),
    (zh.ISO_DATE, resolvers.absolute),
    (en.DATE, resolvers.absolute),
    (en.IN_YEAR, resolvers.absolute),
]


def _open_ended(text: str, m: re.Match[str]) -> bool:
    """'since May 3', 'before yesterday', '去年以来', '从昨天开始' are not windows."""
    b, e = m.span()
    return bool(
        en.OPEN_BEFORE.search(text, max(0, b - 12), b)
        or zh.OPEN_AFTER.match(text, e)
        or (zh.FROM_BEFORE.search(text, 0, b) and zh.ON_AFTER.match(text, e))
    )


def _rank(m: re.Match[str]) -> tuple[int, int]:
    return m.start(), -m.end()


def _find(text: str, today: date) -> tuple[re.Match[str], Days] | None:
    """The first well-formed expression: earliest start, then longest, then rule order."""
    pos = 0
    while pos < len(text):
        best: tuple[re.Match[str], Resolver] | None = None
        for pattern, resolve in RULES:
            found = pattern.search(text, pos)
            if found and (best is None or _rank(found) < _rank(best[0])):
                best = (found, resolve)
        if best is None:
            return None
        found, resolve = best
        try:
            days = None if _open_ended(text, found) else resolve(found, today)
        except (ValueError, OverflowError):  # Feb 30, month 13, a year out of range
            days = None
        if days is not None:
            return found, days
        pos = max(found.end(), pos + 1)
    return None


def _is_time_only(rest: str) -> bool:
    """True when `rest` holds nothing but filler ("发生了什么", "what happened", "?")."""
    words = re.findall(r"[^\W_]+", zh.FILLER.sub(" ", rest.lower().replace("'", " ")))
    return all(w in en.FILLER for w in words)


def _today(now: datetime | None, tz: str | None) -> date:
    if tz is None:
        return (now or datetime.now()).date()
    try:
        zone = ZoneInfo(tz)
    except (ZoneInfoNotFoundError, ValueError, OSError) as exc:
        raise ValueError(f"unknown time zone {tz!r}; expected an IANA name such as "
                         "'Asia/Shanghai' or 'UTC'") from exc  # fmt: skip
    if now is None:
        return datetime.now(zone).date()
    return (now.astimezone(zone) if now.tzinfo else now).date()


def parse_time_range(
    text: str, now: datetime | None = None, tz: str | None = None
) -> TimeWindow | None:
    """Find the first zh/en time expression in `text`, relative to `now`.

    now: reference instant (naive = local wall time; default ``datetime.now()``).
    tz: IANA zone name; an aware `now` is converted to it, a naive one is taken as in it.
    Returns None when no well-formed expression is found (vague words open no window).
    """
    today = _today(now, tz)
    hit = _find(text, today)
    if hit is None:
        return None
    found, (start, end, start_time, end_time) = hit
    b, e = found.span()
    rest = text[:b] + text[e:]
    return TimeWindow(start, end, start_time, end_time, found.group(), (b, e), rest,
                      _is_time_only(rest))  # fmt: skip
