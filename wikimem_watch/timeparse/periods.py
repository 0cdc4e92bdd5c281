"""Calendar arithmetic relative to a reference day: whole years, months, Mon-Sun weeks.

Every function returns plain dates (or a ``Days`` tuple) and raises ``ValueError`` for a day
that does not exist, which the engine reads as "no window".
"""

from __future__ import annotations

import calendar
from datetime import date, timedelta

from .vocab import TOD
from .window import Days


def year_days(year: int) -> Days:
    """The whole calendar year."""
    return date(year, 1, 1), date(year, 12, 31), None, None


def month_days(year: int, month: int) -> Days:
    """The whole calendar month."""
    last = calendar.monthrange(year, month)[1]
    return date(year, month, 1), date(year, month, last), None, None


def month_from(today: date, k: int) -> Days:
    """The whole calendar month k months from today's month."""
    year, index = divmod(today.year * 12 + today.month - 1 + k, 12)
    return month_days(year, index + 1)


def week(today: date, k: int) -> tuple[date, date]:
    """Monday and Sunday of the week k weeks from this one (weeks run Monday to Sunday)."""
    monday = today - timedelta(days=today.weekday()) + timedelta(weeks=k)
    return monday, monday + timedelta(days=6)


def one_day(day: date, tod: str | None = None) -> Days:
    """One day, optionally narrowed to a time of day ('晚上', 'morning')."""
    start_time, end_time = TOD[tod.lower()] if tod else (None, None)
    return day, day, start_time, end_time


def recent(today: date, month: int, day: int) -> date:
    """The most recent month/day not after today (Feb 29 looks back to a leap year)."""
    for year in range(today.year, today.year - 8, -1):
        try:
            found = date(year, month, day)
        except ValueError:
            continue
        if found <= today:
            return found
    raise ValueError(f"no such day: month {month}, day {day}")


def months_back(today: date, n: int) -> date:
    """The same day n months earlier, clamped to the month's last day (Mar 31 -> Feb 28)."""
    year, index = divmod(today.year * 12 + today.month - 1 - n, 12)
    last = calendar.monthrange(year, index + 1)[1]
    return date(year, index + 1, min(today.day, last))


def recent_month(today: date, month: int) -> Days:
    """The most recent such month not in the future; the current month ends today."""
    year = today.year if month <= today.month else today.year - 1
    start, end, _, _ = month_days(year, month)
    return start, min(end, today), None, None


def week_of_month(first: date, last: date, n: int) -> Days | None:
    """Week n (-1: the last) of the month that first..last is: days 7n-6..7n, the last week
    its final seven days, whatever weekday the 1st is ("the first week of July" is the start
    of July, which a Monday–Sunday count would leave in June's last week). The window ends
    at `last` (a current month ends today, ``recent_month``); a week that starts after it,
    or first..last that is no month, is none."""
    month_start, month_end, _, _ = month_days(first.year, first.month)
    if n == 0 or first != month_start or last.replace(day=1) != month_start:
        return None
    start = month_end - timedelta(days=6) if n < 0 else first + timedelta(weeks=n - 1)
    if start > last:
        return None
    return start, min(start + timedelta(days=6), last), None, None
