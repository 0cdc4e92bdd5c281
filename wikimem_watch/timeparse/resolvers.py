"""What a matched expression means: one resolver per class of expression.

A resolver takes the match and the reference day and returns ``Days`` or ``None``; ``None``
or a ``ValueError`` (Feb 30, month 13) means "no window", and the engine then consumes the
span so that no substring of it can match afterwards.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import date, timedelta

from .atoms import parse_atom
from .periods import month_days, month_from, one_day, recent, week, year_days
from .vocab import AGO_MAX, OFFSET, REL_DAY, REL_TOD, UNIT, en_num, num, weekday
from .window import Days

Resolver = Callable[[re.Match[str], date], Days | None]


def blocked(m: re.Match[str], today: date) -> Days | None:
    """A word that only looks like a time expression."""
    return None


def relative_day(m: re.Match[str], today: date) -> Days | None:
    """昨天, 今天早上, 昨晚, 大前天; yesterday, the day before yesterday, last night."""
    key = " ".join(m["rel"].lower().split()).removeprefix("the ")
    offset, tod = REL_TOD[key] if key in REL_TOD else (REL_DAY[key], None)
    return one_day(today + timedelta(days=offset), m["tod"] or tod)


def ago(m: re.Match[str], today: date) -> Days | None:
    """N days ago is that day; N weeks/months/years ago is that whole calendar period."""
    unit = m["u"].lower().rstrip("s")
    unit = UNIT.get(unit[-1], unit)
    text = m["n"]
    n = en_num(text) if text.isascii() and text[0].isalpha() else num(text)
    if not 1 <= n <= AGO_MAX[unit]:
        return None
    if unit == "day":
        return one_day(today - timedelta(days=n))
    if unit == "week":
        return (*week(today, -n), None, None)
    return month_from(today, -n) if unit == "month" else year_days(today.year - n)


def relative_period(m: re.Match[str], today: date) -> Days | None:
    """上周, 这周三, 上周末, 上个月, 去年; last week, this Monday, next month, last year."""
    g = m.groupdict()
    k = -2 if g.get("wbl") else OFFSET[g["w"].lower()]
    unit = (g.get("u") or "week").lower()
    if unit in ("year", "年"):
        return year_days(today.year + k)
    if unit in ("month", "月"):
        start, end, _, _ = month_from(today, k)
        return one_day(start.replace(day=num(g["d"]))) if g.get("d") else (start, end, None, None)
    monday, sunday = week(today, k)
    if g.get("end") or unit == "weekend":
        return monday + timedelta(days=5), sunday, None, None
    if not g.get("wd"):
        return monday, sunday, None, None
    if k > 0 and g["wd"].isascii():
        return None  # "next Friday": the coming one or the one after? Ambiguous: no window.
    first = monday + timedelta(days=weekday(g["wd"]))
    if g.get("wd2"):  # 上周一到周三
        last = monday + timedelta(days=weekday(g["wd2"]))
        return (first, last, None, None) if first <= last else None
    return one_day(first, g.get("tod"))


def bare_weekday(m: re.Match[str], today: date) -> Days | None:
    """周三 / on Wednesday: the most recent such day, today included (never the future)."""
    if m.groupdict().get("wd2"):
        return None  # 周一到周五: which week? Ambiguous: no window.
    return one_day(today - timedelta(days=(today.weekday() - weekday(m["wd"])) % 7), m["tod"])


def absolute(m: re.Match[str], today: date) -> Days | None:
    """2023-05-08, 2023年5月3日, 5月3日, May 3 (2023), 3 May, August 2023, 2021年, in 2021."""
    g = m.groupdict()
    if g.get("atom"):
        year, month, day = parse_atom(g["atom"])
    else:
        year = int(g["y"])
        month, day = (num(g[k]) if g.get(k) else None for k in "md")
    if month is None:
        return year_days(year or 0)
    if day is None:
        return month_days(year or 0, month)
    return one_day(date(year, month, day) if year else recent(today, month, day), g.get("tod"))


def date_range(m: re.Match[str], today: date) -> Days | None:
    """A missing year comes from the other side, else from the latest start not in future."""
    ya, ma, da = parse_atom(m["a"])
    yb, mb, db = parse_atom(m["b"])
    if ma is None:
        return None
    mb = mb or ma
    first, last = (ma, da or 1), (mb, db or 31)
    if ya is None:
        ya = recent(today, ma, da or 1).year if yb is None else yb - (first > last)
    if yb is None:
        yb = ya + (last < first)
    start = date(ya, ma, da or 1)
    end = date(yb, mb, db) if db else month_days(yb, mb)[1]
    return (start, end, None, None) if start <= end else None
