"""What a matched expression means: one resolver per class of expression.

A resolver takes the match and the reference day and returns ``Days`` or ``None``; ``None``
or a ``ValueError`` (Feb 30, month 13) means "no window", and the engine then consumes the
span so that no substring of it can match afterwards.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import date, timedelta

from . import en, zh
from .atoms import parse_atom
from .periods import (
    month_days,
    month_from,
    months_back,
    one_day,
    recent,
    recent_month,
    week,
    year_days,
)
from .vocab import AGO_MAX, MONTH_NO, OFFSET, REL_DAY, REL_TOD, UNIT, en_num, num, weekday
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


def _count(unit_text: str, n_text: str) -> tuple[str, int] | None:
    """('day' | 'week' | 'month' | 'year', N) for '3', 'three', '十五' and 天/周/个月/days."""
    unit = unit_text.lower().rstrip("s")
    unit = UNIT.get(unit[-1], unit)
    n = en_num(n_text) if n_text.isascii() and n_text[0].isalpha() else num(n_text)
    return (unit, n) if 1 <= n <= AGO_MAX[unit] else None


def ago(m: re.Match[str], today: date) -> Days | None:
    """N days ago is that day; N weeks/months/years ago is that whole calendar period."""
    counted = _count(m["u"], m["n"])
    if counted is None:
        return None
    unit, n = counted
    if unit == "day":
        return one_day(today - timedelta(days=n))
    if unit == "week":
        return (*week(today, -n), None, None)
    return month_from(today, -n) if unit == "month" else year_days(today.year - n)


def rolling(m: re.Match[str], today: date) -> Days | None:
    """过去三天, the past 3 days: today and the N-1 days before it; weeks are 7N days, months
    and years run from the day after the same date N months/years back."""
    g = m.groupdict()
    if en.OWNER_BEFORE.search(m.string, max(0, m.start() - 12), m.start()):
        return None  # "my last 3 days in Paris": a period of something else
    if g.get("n3"):  # 这三天; 这两天 and 这一天 are vague ("these days", "that day")
        n = num(g["n3"])
        return (today - timedelta(days=n - 1), today, None, None) if 3 <= n <= 31 else None
    counted = _count(g["u"], g["n"]) if g.get("u") else (g["u1"].lower(), 1)
    if counted is None:
        return None
    unit, n = counted
    if unit in ("day", "week"):
        return today - timedelta(days=n * (7 if unit == "week" else 1) - 1), today, None, None
    return (
        months_back(today, n * (12 if unit == "year" else 1)) + timedelta(days=1),
        today,
        None,
        None,
    )


def month_alone(m: re.Match[str], today: date) -> Days | None:
    """十月, 10月份, in October, early October: the most recent such month, this one counts
    (and then ends today)."""
    name = m.groupdict().get("mn")
    if name:
        if name.lower() in en.AMBIGUOUS_MONTHS and not name[0].isupper():
            return None  # "I may go", "we march on"
        if en.NAME_VERB_AFTER.match(m.string, m.end()):
            return None  # "since May said", "a friend of June told me"
        month = MONTH_NO[name.lower()]
    else:
        month = num(m["m"])
    return recent_month(today, month)


def month_of_year_word(m: re.Match[str], today: date) -> Days | None:
    """this October: this year's. last October: last year's, when that is unambiguous."""
    name = m["mn"]
    if name.lower() in en.AMBIGUOUS_MONTHS and not name[0].isupper():
        return None
    month = MONTH_NO[name.lower()]
    if m["w"].lower() == "this":
        return month_days(today.year, month)
    if month < today.month:
        return None  # in July, "last March": this year's March or last year's? No window.
    return month_days(today.year - 1, month)


def month_of_named_year(m: re.Match[str], today: date) -> Days | None:
    """in July last year, March of this year: that month of that year."""
    return month_days(today.year + OFFSET[m["w"].lower()], MONTH_NO[m["mn"].lower()])


def relative_year(m: re.Match[str], today: date) -> Days | None:
    """去年, 今年; 去年10月 (that month), 去年5月3日 (that day)."""
    year = today.year + OFFSET[m["w"]]
    if not m["m"]:
        return _whole_year(m, year)
    if not m["d"]:
        return month_days(year, num(m["m"]))
    return one_day(date(year, num(m["m"]), num(m["d"])))


def _whole_year(m: re.Match[str], year: int) -> Days | None:
    """The year, unless its winter is meant: 去年冬天 runs into this January, 2024年冬天 into
    2025's, so the calendar year holds the wrong half of it (no window)."""
    return None if zh.WINTER_AFTER.match(m.string, m.end()) else year_days(year)


def weekday_of_week(m: re.Match[str], today: date) -> Days | None:
    """Wednesday last week, last week's Wednesday: that day of that Mon-Sun week."""
    monday, _ = week(today, OFFSET[(m["w"] or m["w2"]).lower()])
    return one_day(monday + timedelta(days=weekday(m["wd"] or m["wd2"])))


def _weekday_is_name(m: re.Match[str]) -> bool:
    """'the Sunday Times', 'a Friday market', 'Monday Night Football', 'Monday.com' name no
    day."""
    b, e = m.span("wd")
    return bool(
        en.ARTICLE_BEFORE.search(m.string, max(0, b - 12), b)
        or (m.string[b].isupper() and en.CAPITALISED_AFTER.match(m.string, e))
        or m.string.startswith(("'s", "’s"), e)
        or en.DOMAIN_AFTER.match(m.string, e)
    )


def relative_period(m: re.Match[str], today: date) -> Days | None:
    """上周, 这周三, 上周末, 上个月, 去年; last week, this Monday, next month, last year."""
    g = m.groupdict()
    k = -2 if g.get("wbl") or g.get("wdbl") else OFFSET[g["w"].lower()]
    wd = g.get("wd") or g.get("wdbl")  # "Friday before last": that day of the week before last
    unit = (g.get("u") or "week").lower()
    if unit in ("year", "年"):
        return year_days(today.year + k)
    if unit in ("month", "月"):
        start, end, _, _ = month_from(today, k)
        return one_day(start.replace(day=num(g["d"]))) if g.get("d") else (start, end, None, None)
    monday, sunday = week(today, k)
    if g.get("end") or unit == "weekend":
        return monday + timedelta(days=5), sunday, None, None
    if not wd:
        return monday, sunday, None, None
    if k > 0 and wd.isascii():
        return None  # "next Friday": the coming one or the one after? Ambiguous: no window.
    first = monday + timedelta(days=weekday(wd))
    if g.get("wd2"):  # 上周一到周三
        last = monday + timedelta(days=weekday(g["wd2"]))
        return (first, last, None, None) if first <= last else None
    return one_day(first, g.get("tod"))


def bare_weekday(m: re.Match[str], today: date) -> Days | None:
    """周三 / on Wednesday: the most recent such day, today included (never the future)."""
    if m.groupdict().get("wd2"):
        return None  # 周一到周五: which week? Ambiguous: no window.
    if m["wd"].isascii() and _weekday_is_name(m):
        return None
    day = today - timedelta(days=(today.weekday() - weekday(m["wd"])) % 7)
    if m.groupdict().get("dom") and int(m["dom"]) != day.day:
        return None  # "Friday the 13th" when last Friday was the 24th: not that day
    return one_day(day, m["tod"])


def day_of_month(m: re.Match[str], today: date) -> Days | None:
    """10号 with no month: the most recent such day not in the future, in this month or the
    last (31号 in a month after a 30-day one is none: no such day of the last month).

    10号到15号, 10号、11号和12号: all days of the month the last one's rule picks, so the span
    is never ahead and never reversed; days out of order (25号到3号: which months?) open none,
    and so do days joined by 和/或/、 a week or more apart (as ``core.JOIN_MAX_DAYS``): the
    first alone would hide the others."""
    if not m["d2"]:
        return one_day(_recent_day_of_month(num(m["d"]), today), m["tod"])
    days = [num(d) for d in zh.DAY_NUMBERS.compiled().findall(m[0])]
    last = _recent_day_of_month(days[-1], today)
    joined = not zh.DAYS_JOINED.isdisjoint(m[0])
    if days != sorted(days) or (joined and days[-1] - days[0] >= 7):
        return None
    return last.replace(day=days[0]), last, None, None


def _recent_day_of_month(day: int, today: date) -> date:
    """The most recent `day` of this month or the last, not after today (ValueError: none)."""
    if not 1 <= day <= 31:
        raise ValueError(f"no day {day} in a month")
    if day <= today.day:
        return today.replace(day=day)
    last_month, _, _, _ = month_from(today, -1)
    return last_month.replace(day=day)  # ValueError: no such day


def absolute(m: re.Match[str], today: date) -> Days | None:
    """2023-05-08, 2023年5月3日, 5月3日, May 3 (2023), 3 May, August 2023, 2021年, in 2021."""
    g = m.groupdict()
    if g.get("atom"):
        if _counts_a_march(m):
            return None
        year, month, day = parse_atom(g["atom"])
        if g.get("yw"):  # "May 3 last year"
            if year:
                return None  # "May 3, 2025 last year" names two years
            year = today.year + OFFSET[g["yw"].lower()]
    else:
        year = int(g["y"])
        month, day = (num(g[k]) if g.get(k) else None for k in "md")
    if month is None:
        return _whole_year(m, year or 0)
    if day is None:
        return month_days(year or 0, month)
    return one_day(date(year, month, day) if year else recent(today, month, day), g.get("tod"))


def _counts_a_march(m: re.Match[str]) -> bool:
    """ "we march 10 miles", "I may 3 times": a lower-case month word that is a verb."""
    atom = m["atom"]
    word = atom.split(None, 1)[0].rstrip(".,")
    if word not in en.AMBIGUOUS_MONTHS:  # capitalised, another month, or a day first
        return False
    start = m.start("atom")
    return bool(
        en.VERB_BEFORE.search(m.string[max(0, start - 12) : start])
        or en.UNIT_AFTER.match(m.string, m.end("atom"))
    )


def date_range(m: re.Match[str], today: date) -> Days | None:
    """A missing year comes from the other side, else from the latest start not in future."""
    ya, ma, da = parse_atom(m["a"])
    yb, mb, db = parse_atom(m["b"])
    if ma is None:  # "between 20 and 22 November": the first day borrows the month and year
        if mb is None:
            return None
        ya, ma = yb, mb
    mb = mb or ma
    first, last = (ma, da or 1), (mb, db or 31)
    if mb == ma and last < first:
        return None  # "5月3日到1日", "May 3 to May 1": backwards, not a year apart
    if m["yw"]:  # "between May 1 and May 3 last year"
        if ya or yb or last < first:
            return None  # two years named, or across New Year: which side is that year?
        ya = yb = today.year + OFFSET[m["yw"].lower()]
    yearless = ya is None and yb is None
    if ya is None:
        ya = recent(today, ma, da or 1).year if yb is None else yb - (first > last)
    if yb is None:
        yb = ya + (last < first)
    start = date(ya, ma, da or 1)
    end = date(yb, mb, db) if db else month_days(yb, mb)[1]
    if yearless:  # "the most recent" reading looks back: it never runs past today
        end = min(end, today)
    return (start, end, None, None) if start <= end else None
