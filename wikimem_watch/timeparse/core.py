"""The engine: the rule table, the search for the first well-formed expression, and the
public ``parse_time_range``.

Design: a table of (compiled pattern, resolver) rules. The earliest match in the text wins,
ties go to the longest. A resolver that returns ``None`` or raises ``ValueError`` (Feb 30,
an idiom, a vague word) consumes its span, so no substring of it can match afterwards.
"""

from __future__ import annotations

import bisect
import re
from datetime import date, datetime, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from . import en, resolvers, zh
from .periods import month_days, month_from, week_of_month, year_days
from .resolvers import Resolver
from .vocab import LazyPattern, num, ordinal
from .window import Days, TimeWindow

# Tried at every position; the earliest match wins, then the longest, then the first here.
# Before the search, a rule is skipped when the lower-cased text holds none of its needles
# (words every match must contain), so a query with no time word runs almost no pattern.
# CJK / LATIN: any non-ASCII character / any ASCII letter.
CJK, LATIN = ("<cjk>",), ("<latin>",)
_DIGITS = tuple("0123456789")
_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_TABLE: list[tuple[tuple[str, ...], LazyPattern, Resolver]] = [
    (CJK, zh.BLOCK, resolvers.blocked),
    (LATIN, en.BLOCK, resolvers.blocked),
    (_DIGITS + ("月", "日", "号"), en.DATE_RANGE, resolvers.date_range),
    (tuple("天日晚夜早晨"), zh.REL, resolvers.relative_day),
    (
        ("yesterday", "today", "tomorrow", "tonight", "night", "morning", "afternoon", "evening"),
        en.REL,
        resolvers.relative_day,
    ),
    (("前",), zh.AGO, resolvers.ago),
    (("ago",), en.AGO, resolvers.ago),
    (("过去", "近", "这"), zh.ROLLING, resolvers.rolling),
    (("past", "last"), en.ROLLING, resolvers.rolling),
    (("周", "星期", "礼拜"), zh.WEEK, resolvers.relative_period),
    (("周", "星期", "礼拜"), zh.WEEKDAY, resolvers.bare_weekday),
    (("week",), en.WEEKDAY_OF_WEEK, resolvers.weekday_of_week),
    (("last", "this", "next"), en.PERIOD, resolvers.relative_period),
    (("day",), en.WEEKDAY, resolvers.bare_weekday),
    (("月",), zh.MONTH, resolvers.relative_period),
    (("年",), zh.YEAR_REL, resolvers.relative_year),
    (("年",), zh.YMD, resolvers.absolute),
    (("月",), zh.MD, resolvers.absolute),
    (("号",), zh.DAY_ALONE, resolvers.day_of_month),
    (("月",), zh.MONTH_ALONE, resolvers.month_alone),
    (("19", "20", "21"), zh.ISO_DATE, resolvers.absolute),
    (_MONTHS, en.DATE, resolvers.absolute),
    (("19", "20", "21"), en.IN_YEAR, resolvers.absolute),
    (_MONTHS, en.MONTH_IN, resolvers.month_alone),
    (_MONTHS, en.MONTH_OF_NTH_WEEK, resolvers.month_alone),
    (_MONTHS, en.MONTH_REL, resolvers.month_of_year_word),
    (("year",), en.MONTH_OF_YEAR, resolvers.month_of_named_year),
]
Rules = list[tuple[LazyPattern, Resolver]]
RULES: Rules = [(pattern, resolve) for _, pattern, resolve in _TABLE]
_NEEDLED = [(frozenset(needles), pattern, resolve) for needles, pattern, resolve in _TABLE]
_NEEDLES = sorted({n for needles, _, _ in _TABLE for n in needles} - {*CJK, *LATIN})
_LATIN = re.compile(r"[A-Za-z]")
# Full-width ASCII (an IME in full-width mode): "１５天前", "７月２１日", "３ days ago".
_HALF_WIDTH = {c: c - 0xFEE0 for c in range(0xFF01, 0xFF5F)}
_FOLDS_TO_ASCII = re.compile("[\u0130\u0131\u017f\u212a]")  # İ ı ſ K (Kelvin)


def _rules_for(text: str) -> Rules:
    """The rules that can match somewhere in `text`, in table order."""
    if _FOLDS_TO_ASCII.search(text):
        return RULES  # 'ſ' matches 's' under re.I but lower() keeps it: needles would miss it
    low = text.lower()
    found = {n for n in _NEEDLES if n in low}
    if not text.isascii():
        found.add(CJK[0])
    if _LATIN.search(text):
        found.add(LATIN[0])
    return [
        (pattern, resolve)
        for needles, pattern, resolve in _NEEDLED
        if not needles.isdisjoint(found)
    ]


# Two days joined ("周三和周四", "Monday or Tuesday") open the span from the first to the last,
# when it is at most this long; farther apart, the first expression alone counts.
JOIN_MAX_DAYS = 7
_JOIN = re.compile(
    r"\s*(?:和|与|跟|及|或者|或是|或|还是|、|&|(?<![a-z])(?:and|or)(?![a-z])"
    r"|(?P<comma>,)(?:\s*(?:and|or)(?![a-z]))?)\s*",
    re.I,
)


def _context(text: str, b: int, e: int, floor: int = 0) -> tuple[str, int, int]:
    """How the words around text[b:e] read it: ("plain" | "since" | "around" | "week" |
    "same day" | "open", span).

    "since May 3", "自从5月3日", "5月3日以来", "从昨天开始", "from May 3 to now" run from that
    day to today, and the span takes in those words; "around May 3", "5月3日左右" are that day
    give or take one; "before yesterday", "昨天之后" are open-ended. Nothing before `floor` is
    read: a range's second end has only its joiner before it (the 一到 of "上周一到7月20日" is
    no "3到4天前").
    """
    en_since = en.SINCE_BEFORE.search(text, max(floor, b - 16), b)
    if en_since:
        return "since", en_since.start(), e
    en_from = en.FROM_BEFORE.search(text, max(floor, b - 8), b)
    if en_from and (to_now := en.TO_NOW_AFTER.match(text, e)):
        return "since", en_from.start(), to_now.end()
    if (
        en.OPEN_BEFORE.search(text, max(floor, b - 12), b)
        or en.BOUND_BEFORE.search(text, max(floor, b - 16), b)
        or en.OFFSET_BEFORE.search(text, max(floor, b - 24), b)
    ):
        return "open", b, e
    if around := en.AROUND_BEFORE.search(text, max(floor, b - 16), b):
        return "around", around.start(), e
    if en.STARTS_WITH_NUMBER.match(text, b) and en.APPROX_BEFORE.search(
        text, max(floor, b - 16), b
    ):
        return "open", b, e
    if text[b] in zh.NUMERALS and zh.APPROX_NUMBER_BEFORE.search(text, max(floor, b - 2), b):
        return "open", b, e
    before = zh.AROUND_BEFORE.search(text, max(floor, b - 3), b)  # 差不多: three characters
    if (after := zh.AROUND_AFTER.match(text, e)) or before:
        return "around", before.start() if before else b, after.end() if after else e
    zh_since = zh.SINCE_BEFORE.search(text, max(floor, b - 2), b)
    zh_from = zh_since or zh.FROM_BEFORE.search(text, max(floor, b - 1), b)
    first = zh_from.start() if zh_from else b
    if after := zh.SINCE_AFTER.match(text, e):
        return "since", first, after.end()
    if zh_from and (after := zh.ON_AFTER.match(text, e)):
        return "since", first, after.end()
    if after := zh.FROM_ON_AFTER.match(text, e):
        return "since", first, after.end()
    if zh_since and (after := zh.LATER_AFTER.match(text, e)):
        return "since", first, after.end()
    if zh.OPEN_AFTER.match(text, e):
        return "open", b, e
    return ("since", first, e) if zh_since else _period(text, b, e, floor)


def _period(text: str, b: int, e: int, floor: int = 0) -> tuple[str, int, int]:
    """A day's week ("the week of July 20", 7月20日那周: "week"), today's date in a period
    ("去年的今天", "this day last year": "same day"), or the expression as it is ("plain")."""
    if week_of := en.WEEK_OF_BEFORE.search(text, max(floor, b - 14), b):
        return "week", week_of.start(), e
    if week_after := zh.WEEK_AFTER.match(text, e):
        return "week", b, week_after.end()
    if same := zh.SAME_DAY_AFTER.match(text, e) or en.SAME_DAY_AFTER.match(text, e):
        return "same day", b, same.end()
    if same := en.SAME_DAY_BEFORE.search(text, max(floor, b - 20), b):
        return "same day", same.start(), e
    return "plain", b, e


def _phrase(text: str, b: int, e: int, one_day: bool) -> tuple[int, int]:
    """The span with the Chinese words that make the expression a phrase ("在", "这天")."""
    if b and zh.ON_BEFORE.search(text, max(0, b - 2), b):
        b -= 1
    if one_day and (after := zh.THAT_DAY_AFTER.match(text, e)):
        e = after.end()
    return b, e


Weeks = tuple[int, int]  # weeks n1..n2 of a month (-1: the last), ``_week_of_month``


def _week_of_month(
    text: str, b: int, e: int, floor: int = 0
) -> tuple[Weeks | None, tuple[int, int]]:
    """(weeks, span) when words around text[b:e] count weeks of it ("the second week of July",
    "July's last week", 7月第二周, 5月最后一周: (2, 2), (-1, -1); "between the first and second
    week of May", 7月第一周到第二周: (1, 2)), else (None, (b, e)). The wider span is what
    context words ("since", 以来, 大概) stand beside."""
    if nth := en.NTH_WEEK_BEFORE.search(text, max(floor, b - 64), b):
        last = ordinal(nth["nth"])
        return (ordinal(nth["nth1"]) if nth["nth1"] else last, last), (nth.start(), e)
    if nth := en.NTH_WEEK_AFTER.match(text, e) or zh.NTH_WEEK_AFTER.match(text, e):
        last = ordinal(nth["nth"] or "最后")  # 最后一周: no number
        first = ordinal(nth["nth1"]) if nth.groupdict().get("nth1") else last
        return (first, last), (b, nth.end())
    return None, (b, e)


def _weeks_of(days: Days, weeks: Weeks) -> Days | None:
    """Weeks n1..n2 of the month ``days`` is, from the first one's first day to the second
    one's last ("between the first and second week of May": May 1–14); none when either week
    is none (ahead, or no month) or the second starts before the first."""
    first = week_of_month(days[0], days[1], weeks[0])
    last = first if weeks[1] == weeks[0] else week_of_month(days[0], days[1], weeks[1])
    if first is None or last is None or last[0] < first[0]:
        return None
    return first if last is first else (first[0], last[1], None, None)


def _rank(m: re.Match[str]) -> tuple[int, int]:
    return m.start(), -m.end()


def _resolve(
    found: re.Match[str], resolve: Resolver, today: date, weeks: Weeks | None = None
) -> Days | None:
    """What ``found`` means, or None; ``weeks``: those weeks of it (``_week_of_month``)."""
    try:
        days = resolve(found, today)
    except (ValueError, OverflowError):  # Feb 30, month 13, a year out of range
        return None
    return days if days is None or weeks is None else _weeks_of(days, weeks)


def _match_at(text: str, pos: int, rules: Rules) -> tuple[re.Match[str], Resolver] | None:
    """The longest rule match starting exactly at pos."""
    best: tuple[re.Match[str], Resolver] | None = None
    for pattern, resolve in rules:
        found = pattern.match(text, pos)
        if found and (best is None or found.end() > best[0].end()):
            best = (found, resolve)
    return best


def _is_weekday(found: re.Match[str]) -> bool:
    groups = found.groupdict()
    return bool(groups.get("wd") or groups.get("wd2"))


def _join(
    text: str, found: re.Match[str], resolve: Resolver, day: date, today: date, rules: Rules
) -> tuple[int, Days] | None:
    """(end, window) when more single days are joined to `day` ("周三和周四"), else None.

    A bare weekday after a weekday is the next such day after it (上周三和周四 = that Thursday),
    and a chain that starts with a bare weekday and would reach past today moves back a week.
    """
    days, end = [day], found.end()
    while (joiner := _JOIN.match(text, end)) and (hit := _match_at(text, joiner.end(), rules)):
        second, resolve2 = hit
        same_kind = resolve2 is resolve or (_is_weekday(found) and _is_weekday(second))
        if joiner["comma"] and not same_kind:
            break  # a comma lists days of one kind: "Monday, Tuesday and Wednesday"
        mode, _, _ = _context(text, *second.span())
        days2 = _resolve(second, resolve2, today) if mode == "plain" else None
        if days2 is None or days2[0] != days2[1]:
            break
        nxt = days2[0]
        if resolve2 is resolvers.bare_weekday and _is_weekday(found):
            step = timedelta(days=(nxt.weekday() - days[-1].weekday() - 1) % 7 + 1)
            if days[-1] > date.max - step:
                break  # the next such day would be after 9999-12-31
            nxt = days[-1] + step
        if max(*days, nxt) - min(*days, nxt) >= timedelta(days=JOIN_MAX_DAYS):
            break
        days.append(nxt)
        end = second.end()
    if len(days) == 1:
        return None
    first, last = min(days), max(days)
    if resolve is resolvers.bare_weekday and last > today:
        if first < date.min + timedelta(weeks=1):
            return None  # a week back would be before 0001-01-01
        first, last = first - timedelta(weeks=1), last - timedelta(weeks=1)
    return end, (first, last, None, None)


# "从7月1日到今天", "from July 1 to yesterday", "5月到7月": a range whose second end is any
# expression, not only a written date (``en.DATE_RANGE`` reads those).
_TO = re.compile(
    r"\s*(?:到|至|~|～|–|—|-|(?<![a-z])(?:to|until|till|through|thru)(?![a-z]))\s*", re.I
)


# The second end of a range whose first end no rule reads ("from May to the second week of
# June", 从春节到7月第二周): alone it would hide the first end's days, so it opens none.
_SECOND_END = re.compile(
    r"(?:(?<![a-z])(?:from|between)\s+[^\s,.;!?][^,.;!?]{0,30}?\s+"
    r"(?:to|until|till|through|thru|and)\s+|从[^，。；！？,.;!?\s]{1,12}?(?:到|至)"
    # "the 20th to 3 days ago", 20号到三天前: a bare day before it, which no rule reads alone
    r"|(?<![a-z0-9])(?:the\s+)?[0-9]{1,2}(?:st|nd|rd|th)\s+(?:to|until|till|through|thru)\s+"
    r"|(?<![0-9一二三四五六七八九十])[0-9一二三四五六七八九十]{1,3}[号日]\s*(?:到|至))$",
    re.I,
)
_RANGE_START = re.compile(r"(?:(?<![a-z])(?:from|between)\s+|从|自)$", re.I)
_BETWEEN = re.compile(r"(?<![a-z])between\s+(?:the\s+)?$", re.I)
_AND = re.compile(r"\s+and\s+", re.I)


def _span_to(
    text: str, b: int, end: int, days: Days, today: date, rules: Rules
) -> tuple[int, Days | None] | None:
    """(end, window) when the expression text[b:end] (read as ``days``) is the first end of a
    range, else None. The window runs from the first end's start to the second end's end; a
    second end that comes before the first ("从3月到1月", "from yesterday to July 5"), or one
    that opens no window itself ("from Monday to next Friday", "从5月3日到7月第五周" while that
    week is ahead), makes the range unsound: (end, None), no window, and not the first end
    alone. "between A and B" joins with "and"; "to the second week of June" counts a week of
    the month after it."""
    joiner = _TO.match(text, end)
    between = joiner is None and _BETWEEN.search(text, max(0, b - 16), b) is not None
    if between:
        joiner = _AND.match(text, end)
    if joiner is None:
        return None
    pos = joiner.end()
    if lead := en.NTH_WEEK_LEAD.match(text, pos):  # "of June", or after "of": "of last month"
        hit = _match_at(text, lead.start("of"), rules) or _match_at(text, lead.end(), rules)
        if hit is None:
            return lead.end(), None  # "from May 3 to the second week of the trip"
    else:
        hit = _match_at(text, pos, rules)
    if hit is None:
        return _day_to(text, pos, days, today) or _month_to(text, pos, days, today)
    second, resolve2 = hit
    if resolve2 is resolvers.blocked and second.re is zh.BLOCK.compiled():
        return None  # 今天到晚上 ("today until the evening"), 5月3日到最后: a word, not an end
    weeks, (b2, end2) = _week_of_month(text, *second.span(), floor=pos)  # "从6月到7月第二周"
    mode, _, end2 = _context(text, b2, end2, floor=b2)
    other = _resolve(second, resolve2, today, weeks) if mode == "plain" else None
    if other is not None and between:  # "between yesterday and Monday": either order
        return end2, (min(days[0], other[0]), max(days[1], other[1]), None, None)
    if other is None or other[1] < days[0]:
        return end2, None
    return end2, (days[0], other[1], None, None)


def _day_to(text: str, pos: int, days: Days, today: date) -> tuple[int, Days | None] | None:
    """(end, window) when text[pos:] is a bare day ending a range, which no rule reads alone
    (从上个月20号到10号, 从昨天到25号, "from last Monday to the 20th"): the first such day on or
    after the first end's last day, a month on at most (从上个月5号到10号 is June 5–10,
    从上个月20号到10号 June 20 – July 10), and never past today, as a range of days with no
    year is not. No such day (in March, 从上个月31号到30号: February has no 30th) opens none;
    anything else is not a range (None)."""
    if not (day := zh.DAY_AFTER_TO.match(text, pos) or en.DAY_AFTER_TO.match(text, pos)):
        return None
    first, last, n = days[0], days[1], num(day["d"])
    try:
        month = last if n >= last.day else month_from(last, 1)[0]
        end = month.replace(day=n)
    except ValueError:
        return day.end(), None
    return day.end(), (first, min(end, today) if first <= today else end, None, None)


def _month_to(text: str, pos: int, days: Days, today: date) -> tuple[int, Days | None] | None:
    """(end, window) when text[pos:] is a month named alone ending a range, which no rule reads
    without a word such as "in" before it ("from May 3 to June", "from the first week of May
    to June"): the most recent such month, as "in June" is. A lower-case may or march, or a
    name ("to June said"), is not a range (None)."""
    if not (month := en.MONTH_AFTER_TO.match(text, pos)):
        return None
    other = _resolve(month, resolvers.month_alone, today)
    if other is None:
        return None
    return month.end(), (days[0], other[1], None, None) if other[1] >= days[0] else None


# 《十月围城》, 《星期天的约会》, 《明天会更好》: the title of a work, whatever time words it holds.
_TITLE = re.compile(r"《[^《》]*》")


def _in_title(titles: list[tuple[int, int]], b: int, e: int) -> bool:
    """True when text[b:e] lies inside one of `titles` (sorted, disjoint spans of 《…》)."""
    i = bisect.bisect_left(titles, (b, 0)) - 1  # the last title that opens before b
    return i >= 0 and e < titles[i][1]


def _find(text: str, today: date) -> tuple[int, int, Days] | None:
    """The first well-formed expression: earliest start, then longest, then rule order."""
    rules, pos = _rules_for(text), 0
    titles = [t.span() for t in _TITLE.finditer(text)] if "《" in text else []
    # Each rule's next match, searched again only once `pos` has passed its start (the same
    # match a new search would find): a rule with none left is not searched again, so a long
    # text of rejected look-alikes ("Sunday Times" × 8000) is one pass per rule, not one per
    # rejected match.
    ahead = [pattern.search(text) for pattern, _ in rules]
    while pos < len(text):
        best: tuple[re.Match[str], Resolver] | None = None
        for i, (pattern, resolve) in enumerate(rules):
            found = ahead[i]
            if found is not None and found.start() < pos:
                found = ahead[i] = pattern.search(text, pos)
            if found and (best is None or _rank(found) < _rank(best[0])):
                best = (found, resolve)
        if best is None:
            return None
        found, resolve = best
        week, span = _week_of_month(text, *found.span())
        mode, b, e = _context(text, *span)
        mode = _no_window_after_all(text, titles, found, resolve, mode, b)
        days = None if mode == "open" else _resolve(found, resolve, today, week)
        if days is not None and mode == "same day" and days[0] == days[1]:
            mode, (b, e) = "plain", span  # "yesterday, today": two days, joined below
        if days is not None and mode != "plain":
            days = _reshaped(mode, days, today)
        if days is not None and mode == "plain":
            joined = _span_to(text, b, e, days, today, rules)
            if joined is None and days[0] == days[1] and week is None:
                joined = _join(text, found, resolve, days[0], today, rules)
            if joined is not None:
                e, days = joined
            if joined is not None or found.groupdict().get("wd2"):  # 从上周一到周三: a range
                start = _RANGE_START.search(text, max(0, b - 10), b)
                b = start.start() if start else b  # "from", "between", "从": the range's too
        if days is not None:
            return b, e, days
        pos = max(found.end(), e, pos + 1)  # a backwards range: neither end counts
    return None


def _no_window_after_all(
    text: str,
    titles: list[tuple[int, int]],
    found: re.Match[str],
    resolve: Resolver,
    mode: str,
    b: int,
) -> str:
    """ "open" (no window) where more of the text takes the expression's window away, else
    `mode`."""
    if titles and _in_title(titles, *found.span()):
        return "open"  # a title: no window, and nothing inside it matches afterwards
    if mode == "around" and resolve is resolvers.ago:
        return "open"  # "about 10 days ago", 三天前左右: the slack grows with the count
    if mode == "plain" and _SECOND_END.search(text, max(0, b - 48), b):
        return "open"  # "from May to the second week of June": the first end is not read
    return mode


def _reshaped(mode: str, days: Days, today: date) -> Days | None:
    """The window a context word makes of an expression's days: "since" runs them to today,
    "week" is the Monday–Sunday week of one day, "same day" is today's date in a whole year,
    month or week ("去年的今天", "a month ago today", "上周的今天"; "下个月的今天" is ahead, as
    "下个月" is: the gate keeps it from reaching past now)."""
    first, last = days[0], days[1]
    if mode == "since":
        return (first, today, None, None) if first <= today else None
    if mode == "around":
        return _around(first, last, today)
    if mode == "week":
        monday = first - timedelta(days=first.weekday())
        one_day = first == last and monday <= date.max - timedelta(days=6)
        return (monday, monday + timedelta(days=6), None, None) if one_day else None
    if mode == "same day":
        day = _same_date(first, last, today)  # no such period ("the past 3 days today"): as is
        return days if day is None else (day, day, None, None)
    return days


def _around(first: date, last: date, today: date) -> Days | None:
    """ "around last Tuesday", 上周二左右: the day and the days either side of it, since the
    user says it may be off by one (the gate's own first widening step). A day not ahead
    stays not ahead: "大概昨天" ends today. Longer spans ("around last week") open none:
    how far around a week reaches is not said."""
    if first != last or not date.min < first < date.max:
        return None
    end = first + timedelta(days=1)
    return first - timedelta(days=1), min(end, today) if first <= today else end, None, None


def _same_date(first: date, last: date, today: date) -> date | None:
    """Today's date inside a whole calendar year, month or Monday–Sunday week (the last day
    of a shorter month: 3月31日's "上个月的今天" is 2月28日), else None."""
    if (last - first).days == 6 and first.weekday() == 0:
        return first + timedelta(days=today.weekday())
    if (first, last, None, None) == year_days(first.year):
        month = today.month
    elif (first, last, None, None) == month_days(first.year, first.month):
        month = first.month
    else:
        return None
    return date(first.year, month, min(today.day, month_days(first.year, month)[1].day))


def is_time_only(rest: str) -> bool:
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
    try:
        return (now.astimezone(zone) if now.tzinfo else now).date()
    except OverflowError:
        raise ValueError(f"now {now.isoformat()} in {tz} falls outside the years 1-9999") from None


def parse_time_range(
    text: str, now: datetime | None = None, tz: str | None = None
) -> TimeWindow | None:
    """Find the first zh/en time expression in `text`, relative to `now`.

    now: reference instant (naive = local wall time; default ``datetime.now()``).
    tz: IANA zone name; an aware `now` is converted to it, a naive one is taken as in it.
    Returns None when no well-formed expression is found (vague words open no window).
    """
    today = _today(now, tz)
    hit = _find(text.translate(_HALF_WIDTH), today)  # one character for one: spans hold
    if hit is None:
        return None
    b, e, (start, end, start_time, end_time) = hit
    b, e = _phrase(text, b, e, start == end)
    # Not glued: "我在5月4日这天分享" leaves 我 and 分享, not a bigram the text never had.
    glue = b == 0 or e == len(text) or text[b - 1].isspace() or text[e].isspace()
    rest = text[:b] + ("" if glue else " ") + text[e:]
    return TimeWindow(start, end, start_time, end_time, text[b:e], (b, e), rest,
                      is_time_only(rest))  # fmt: skip
