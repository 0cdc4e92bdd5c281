"""Time-expression fast path: zh/en query text -> an inclusive window of local days.

This module owns the *parsed* half of the time gate (DESIGN.md §3): given a query and a
reference ``now`` it finds the first well-formed time expression and returns its window
(optionally with times of day), the matched span, and the query with those words removed
(the text BM25 scores). It is pure (no I/O) and standard-library only.

It is deliberately narrow. A wrong window hides the memory the user wants, while a missing
one only costs ranking quality (recency decay covers vague wording), so vague, open-ended
or ambiguous wording opens no window. The semantics are recorded in docs/adr/0003.

Design: a table of (compiled pattern, resolver) rules. The earliest match in the text wins,
ties go to the longest. A resolver that returns ``None`` or raises ``ValueError`` (Feb 30,
an idiom, a vague word) consumes its span, so no substring of it can match afterwards.
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

__all__ = ["TimeWindow", "parse_date_pair", "parse_time_range"]

_Days = tuple[date, date, time | None, time | None]  # start, end, start_time, end_time
_Resolver = Callable[[re.Match[str], date], _Days | None]


@dataclass(frozen=True, slots=True)
class TimeWindow:
    """An inclusive window of local days; ``rest`` is the input without ``span``."""

    start: date
    end: date
    start_time: time | None = None
    end_time: time | None = None
    matched: str = ""
    span: tuple[int, int] = (0, 0)
    rest: str = ""
    time_only: bool = False

    def __post_init__(self) -> None:
        if self.start > self.end:
            raise ValueError(f"TimeWindow start {self.start} is after end {self.end}")

    def to_dict(self) -> dict[str, object]:
        """JSON-ready form: ISO dates, ``HH:MM`` times (or None), span as a list."""

        def hhmm(value: time | None) -> str | None:
            return None if value is None else value.strftime("%H:%M")

        return {
            "start": self.start.isoformat(),
            "end": self.end.isoformat(),
            "start_time": hhmm(self.start_time),
            "end_time": hhmm(self.end_time),
            "matched": self.matched,
            "span": [self.span[0], self.span[1]],
            "rest": self.rest,
            "time_only": self.time_only,
        }


# --- vocabulary --------------------------------------------------------------------------

_TOD: dict[str, tuple[time, time]] = {}
for _words, _span in (
    ("早上 上午 早晨 清晨 morning", (time(6), time(12))),
    ("中午", (time(11), time(14))),
    ("下午 afternoon", (time(12), time(18))),
    ("傍晚", (time(17), time(19))),
    ("晚上 夜里 夜晚 evening night", (time(18), time(23, 59))),
    ("凌晨", (time(0), time(6))),
):
    _TOD.update(dict.fromkeys(_words.split(), _span))

# Relative days; the compact forms carry their own time of day.
_REL_DAY = {"大前天": -3, "前天": -2, "昨天": -1, "昨日": -1, "今天": 0, "今日": 0, "明天": 1,
            "明日": 1, "后天": 2, "大后天": 3, "day before yesterday": -2, "yesterday": -1,
            "today": 0, "tomorrow": 1, "day after tomorrow": 2}  # fmt: skip
_REL_TOD = {"昨晚": (-1, "晚上"), "昨夜": (-1, "晚上"), "今晚": (0, "晚上"), "明晚": (1, "晚上"),
            "今早": (0, "早上"), "今晨": (0, "早上"), "明早": (1, "早上"), "tonight": (0, "night"),
            "last night": (-1, "night"), "this morning": (0, "morning"),
            "this afternoon": (0, "afternoon"), "this evening": (0, "evening")}  # fmt: skip
_OFFSET = {"上上": -2, "上": -1, "本": 0, "这": 0, "下": 1, "下下": 2, "大前": -3, "前": -2,
           "去": -1, "今": 0, "明": 1, "last": -1, "this": 0, "next": 1}  # fmt: skip
_WD_EN = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_WD_ZH = {"一": 0, "二": 1, "三": 2, "四": 3, "五": 4, "六": 5, "日": 6, "天": 6}
_MONTH_NO = {name: i for i, full in enumerate(calendar.month_name[1:], 1)
             for name in (full.lower(), full[:3].lower())} | {"sept": 9}  # fmt: skip
_CN = "零〇一二两三四五六七八九十"
_CN_DIGIT = {c: i for i, c in enumerate("零一二三四五六七八九")} | {"〇": 0, "两": 2}
_EN_UNITS = ("zero one two three four five six seven eight nine ten eleven twelve thirteen "
             "fourteen fifteen sixteen seventeen eighteen nineteen").split()  # fmt: skip
_EN_TENS = "twenty thirty forty fifty sixty seventy eighty ninety".split()
_UNIT = {"天": "day", "日": "day", "周": "week", "期": "week", "拜": "week", "月": "month",
         "年": "year"}  # fmt: skip
# How far back "N units ago" may reach before it reads as a quantity, not a date.
_AGO_MAX = {"day": 3660, "week": 520, "month": 1200, "year": 200}


def _alt(words: Iterable[str]) -> str:
    """Regex alternation, longest first so that 'seventeen' is tried before 'seven'."""
    return "|".join(re.escape(w) for w in sorted(words, key=len, reverse=True))


def _plain(pattern: str) -> str:
    """The pattern without named groups, so date atoms can be embedded twice in a range."""
    return re.sub(r"\(\?P<\w+>", "(?:", pattern)


_NUM_ZH = rf"(?:[0-9]{{1,4}}|[{_CN}]{{1,3}})"
_DAY_ZH = rf"(?:[0-9]{{1,2}}|[{_CN}]{{1,3}})"
_TOD_ZH = rf"(?:的?(?P<tod>{_alt([w for w in _TOD if not w.isascii()])}))?"
_TOD_EN = r"(?:\s+(?:in\s+the\s+)?(?P<tod>morning|afternoon|evening|night))?"
_WD = _alt(_WD_EN)
_MON = _alt(_MONTH_NO)
_YEAR = r"(?P<y>(?:19|20|21)[0-9]{2})(?![0-9])"
_DAY = r"(?P<d>[0-9]{1,2})(?:st|nd|rd|th)?(?![0-9a-z])"
_UNITS_EN = _alt(_EN_UNITS[1:10])
_NUM_EN = rf"(?:[0-9]{{1,4}}|(?:{_alt(_EN_TENS)})(?:[-\s](?:{_UNITS_EN}))?|{_alt(_EN_UNITS)}|an?)"
_PRE = r"(?:(?:on|in|during)\s+)?"  # inside the span, so `rest` loses the preposition too
# After 上周一/周日…: 上周一共 (in all), 上周三次 (three times), 上周日记 (diary) are no days.
_WD_TAIL = (
    r"(?![次天个遍回趟种点位名件本场顿杯批条]"
    r"|(?<=一)[共起直些下样切半般定周同致会整]|(?<=日)[记志程常子期历报])"
)

# Date atoms, shared by the single-date rules and by ranges (groups: y, m | mn, d | zd).
_ISO = rf"(?<![0-9]){_YEAR}[-/](?P<m>[0-9]{{1,2}})[-/](?P<d>[0-9]{{1,2}})(?![0-9])"
_ZH_MD = rf"(?:{_YEAR}年)?(?P<m>{_DAY_ZH})月(?P<d>{_DAY_ZH})[日号](?![楼线])"
_EN_MD = rf"(?:(?:{_WD}),?\s+)?(?P<mn>{_MON})\.?\s+(?:the\s+)?{_DAY}(?:,?\s+{_YEAR})?"
_EN_DM = (
    rf"(?:(?:{_WD}),?\s+)?(?:the\s+)?{_DAY}\s+(?:of\s+)?(?P<mn>{_MON})(?![a-z])\.?(?:,?\s+{_YEAR})?"
)
_EN_MY = rf"(?P<mn>{_MON})\.?,?\s+(?:of\s+)?{_YEAR}"
_BARE_DAY = rf"(?:(?P<zd>{_DAY_ZH})[日号]|{_DAY}(?:,?\s+{_YEAR})?)"
_ATOMS = [re.compile(p, re.I) for p in (_ISO, _ZH_MD, _EN_MD, _EN_DM, _EN_MY, _BARE_DAY)]
_ATOM = "|".join(_plain(p) for p in (_ISO, _ZH_MD, _EN_MD, _EN_DM, _EN_MY))
# "between A and B", "from A to B", "A - B", "从A到B"; B may be a bare day ("August 11-15").
_RANGE = (
    rf"(?:(?P<btw>between\s+)|from\s+|从)?(?P<a>{_ATOM})\s*"
    r"(?(btw)and|(?:到|至|to|until|till|through|thru|-|–|—|~|～))"
    rf"\s*(?P<b>{_ATOM}|{_plain(_BARE_DAY)})"
)

# Words that contain an expression but are none. Matching them as "no window" consumes
# them: 晚上月亮 never yields 上月, 然后天气 never yields 后天, 一周三次 never yields 周三.
_ZH_BLOCK = (
    "马上 晚上 早上 路上 网上 身上 天上 楼上 以上 赶上 遇上 碰上 然后 之后 以后 最后 今后 随后 "
    "此后 落后 往后 过后 午后 饭后 背后 前后 先后 事后 日后 稍后 而后 其后 聪明 光明 文明 说明 "
    "证明 发明 透明 分明 表明 声明 鲜明 精明 清明 黎明 英明 简明 高明 开明 照明 阐明 注明 标明 "
    "查明 失明 指明 如今 当今 现今 迄今 古今 至今 以前 之前 从前 目前 提前 面前 眼前 当前 生前 "
    "事前 门前 跟前 空前 向前 先前 日前 此前 睡前 饭前 过去 最近 前几天 前些天 前阵子 那天 近来 "
    "近期 这几天 这些天 几天前 不久前 某天 有一天 一日三秋 明日黄花 千年 后天性"
).split()
_EN_BLOCK = (
    r"the\s+(?:last|past|previous)\s+(?:few\s+)?(?:days?|weeks?|weekends?|months?|years?)"
    r"|(?:last|first|final)\s+(?:day|week|weekend|month)s?\s+of"
    rf"|(?:next|every|each|(?:this\s+)?coming)\s+(?:{_WD})s?"
    rf"|(?:{_WD})\s*(?:-|–|to|through|thru|till|until)\s*(?:{_WD})|sunday\s+school"
)
# Open-ended wording around an expression ("since May 3", "去年以来") is not a window.
_EN_OPEN = re.compile(r"(?<![a-z])(?:since|after|before|until|till|prior\s+to)\s+$", re.I)
_ZH_OPEN = re.compile(r"以来|之后|以后|之前|以前|前后|左右")
_ZH_FROM, _ZH_ON = re.compile(r"(?:从|自)$"), re.compile(r"开始|起(?![床来身])")


# --- arithmetic ----------------------------------------------------------------------------


def _num(text: str) -> int:
    """ASCII digits or a Chinese numeral below 100 (十五, 二十, 两); ValueError otherwise."""
    if text.isascii() and text.isdigit():
        return int(text)
    tens, ten, units = text.partition("十") if "十" in text else ("", "", text)
    digits_ok = set(tens + units) <= _CN_DIGIT.keys()
    if len(tens) > 1 or len(units) > 1 or not (ten or units) or not digits_ok:
        raise ValueError(f"not a number: {text!r}")
    high = (_CN_DIGIT[tens] if tens else 1) if ten else 0
    return high * 10 + (_CN_DIGIT[units] if units else 0)


def _en_num(text: str) -> int:
    """'a', 'three', 'twenty-one' (digits go through _num)."""
    words = text.lower().replace("-", " ").split()
    if words[0] in ("a", "an"):
        return 1
    if words[0] in _EN_UNITS:
        return _EN_UNITS.index(words[0])
    return 20 + 10 * _EN_TENS.index(words[0]) + (_EN_UNITS.index(words[1]) if words[1:] else 0)


def _year(year: int) -> _Days:
    return date(year, 1, 1), date(year, 12, 31), None, None


def _month(year: int, month: int) -> _Days:
    return date(year, month, 1), date(year, month, calendar.monthrange(year, month)[1]), None, None


def _month_from(today: date, k: int) -> _Days:
    """The whole calendar month k months from today's month."""
    year, index = divmod(today.year * 12 + today.month - 1 + k, 12)
    return _month(year, index + 1)


def _week(today: date, k: int) -> tuple[date, date]:
    """Monday and Sunday of the week k weeks from this one (weeks run Monday to Sunday)."""
    monday = today - timedelta(days=today.weekday()) + timedelta(weeks=k)
    return monday, monday + timedelta(days=6)


def _day(day: date, tod: str | None = None) -> _Days:
    start_time, end_time = _TOD[tod.lower()] if tod else (None, None)
    return day, day, start_time, end_time


def _recent(today: date, month: int, day: int) -> date:
    """The most recent month/day not after today (Feb 29 looks back to a leap year)."""
    for year in range(today.year, today.year - 8, -1):
        try:
            found = date(year, month, day)
        except ValueError:
            continue
        if found <= today:
            return found
    raise ValueError(f"no such day: month {month}, day {day}")


def _weekday(name: str) -> int:
    name = name.lower()
    return _WD_ZH[name] if name in _WD_ZH else _WD_EN.index(name)


def _parse_atom(text: str) -> tuple[int | None, int | None, int | None]:
    """(year, month, day) of one date atom; month None for a bare day, day None for a month."""
    for atom in _ATOMS:
        if found := atom.fullmatch(text):
            g = found.groupdict()
            month = _num(g["m"]) if g.get("m") else None
            if g.get("mn"):
                # Lower-case 'may'/'march' count only with a number after them ('I may go').
                tail = text[found.end("mn") :]
                if g["mn"] in ("may", "march") and not re.match(r"\.?,?\s+(?:of\s+)?\d", tail):
                    raise ValueError(f"lower-case {g['mn']!r} without a number after it")
                month = _MONTH_NO[g["mn"].lower()]
            day = g.get("d") or g.get("zd")
            return int(g["y"]) if g.get("y") else None, month, _num(day) if day else None
    raise ValueError(f"not a date: {text!r}")


# --- resolvers -------------------------------------------------------------------------------


def _blocked(m: re.Match[str], today: date) -> _Days | None:
    return None


def _relative_day(m: re.Match[str], today: date) -> _Days | None:
    """昨天, 今天早上, 昨晚, 大前天; yesterday, the day before yesterday, last night."""
    key = " ".join(m["rel"].lower().split()).removeprefix("the ")
    offset, tod = _REL_TOD[key] if key in _REL_TOD else (_REL_DAY[key], None)
    return _day(today + timedelta(days=offset), m["tod"] or tod)


def _ago(m: re.Match[str], today: date) -> _Days | None:
    """N days ago is that day; N weeks/months/years ago is that whole calendar period."""
    unit = m["u"].lower().rstrip("s")
    unit = _UNIT.get(unit[-1], unit)
    text = m["n"]
    n = _en_num(text) if text.isascii() and text[0].isalpha() else _num(text)
    if not 1 <= n <= _AGO_MAX[unit]:
        return None
    if unit == "day":
        return _day(today - timedelta(days=n))
    if unit == "week":
        return (*_week(today, -n), None, None)
    return _month_from(today, -n) if unit == "month" else _year(today.year - n)


def _relative_period(m: re.Match[str], today: date) -> _Days | None:
    """上周, 这周三, 上周末, 上个月, 去年; last week, this Monday, next month, last year."""
    g = m.groupdict()
    k = -2 if g.get("wbl") else _OFFSET[g["w"].lower()]
    unit = (g.get("u") or "week").lower()
    if unit in ("year", "年"):
        return _year(today.year + k)
    if unit in ("month", "月"):
        start, end, _, _ = _month_from(today, k)
        return _day(start.replace(day=_num(g["d"]))) if g.get("d") else (start, end, None, None)
    monday, sunday = _week(today, k)
    if g.get("end") or unit == "weekend":
        return monday + timedelta(days=5), sunday, None, None
    if not g.get("wd"):
        return monday, sunday, None, None
    if k > 0 and g["wd"].isascii():
        return None  # "next Friday": the coming one or the one after? Ambiguous: no window.
    first = monday + timedelta(days=_weekday(g["wd"]))
    if g.get("wd2"):  # 上周一到周三
        last = monday + timedelta(days=_weekday(g["wd2"]))
        return (first, last, None, None) if first <= last else None
    return _day(first, g.get("tod"))


def _bare_weekday(m: re.Match[str], today: date) -> _Days | None:
    """周三 / on Wednesday: the most recent such day, today included (never the future)."""
    if m.groupdict().get("wd2"):
        return None  # 周一到周五: which week? Ambiguous: no window.
    return _day(today - timedelta(days=(today.weekday() - _weekday(m["wd"])) % 7), m["tod"])


def _absolute(m: re.Match[str], today: date) -> _Days | None:
    """2023-05-08, 2023年5月3日, 5月3日, May 3 (2023), 3 May, August 2023, 2021年, in 2021."""
    g = m.groupdict()
    if g.get("atom"):
        year, month, day = _parse_atom(g["atom"])
    else:
        year = int(g["y"])
        month, day = (_num(g[k]) if g.get(k) else None for k in "md")
    if month is None:
        return _year(year or 0)
    if day is None:
        return _month(year or 0, month)
    return _day(date(year, month, day) if year else _recent(today, month, day), g.get("tod"))


def _range(m: re.Match[str], today: date) -> _Days | None:
    """A missing year comes from the other side, else from the latest start not in future."""
    ya, ma, da = _parse_atom(m["a"])
    yb, mb, db = _parse_atom(m["b"])
    if ma is None:
        return None
    mb = mb or ma
    first, last = (ma, da or 1), (mb, db or 31)
    if ya is None:
        ya = _recent(today, ma, da or 1).year if yb is None else yb - (first > last)
    if yb is None:
        yb = ya + (last < first)
    start = date(ya, ma, da or 1)
    end = date(yb, mb, db) if db else _month(yb, mb)[1]
    return (start, end, None, None) if start <= end else None


# --- rules ---------------------------------------------------------------------------------


def _en(pattern: str) -> re.Pattern[str]:
    """English rules: case-insensitive, bounded by non-alphanumerics on both sides."""
    return re.compile(rf"(?<![a-z0-9])(?:{pattern})(?![a-z0-9])", re.I)


_REL_ZH = _alt(w for w in (*_REL_DAY, *_REL_TOD) if not w.isascii())
_REL_EN = (
    r"(?:the\s+)?day\s+(?:before\s+yesterday|after\s+tomorrow)|yesterday|today|tomorrow"
    r"|tonight|last\s+night|this\s+(?:morning|afternoon|evening)"
)
_AGO_ZH = (
    rf"(?<![0-9{_CN}百千万几])(?P<n>{_NUM_ZH})(?P<u>天|日|个?(?:周|星期|礼拜)|个月|年)(?:之|以)?前"
)
# 上周, 上上个星期, 这周三, 上周末, 上周一到周三 (but not 这周围, 本周期)
_WD_ZH_SPAN = (
    rf"(?P<wd>[一二三四五六日天]){_WD_TAIL}"
    r"(?:[到至~-](?:周|星期|礼拜)?(?P<wd2>[一二三四五六日天]))?"
)
_WEEK_ZH = (
    r"(?P<w>上上|下下|上|下|本|这)个?(?:周|星期|礼拜)(?![期刊报围边岁全密转旋])"
    rf"(?:(?P<end>末)|{_WD_ZH_SPAN}{_TOD_ZH})?"
)
_PERIOD_EN = (
    rf"(?P<w>last|this|next)\s+(?:(?P<u>week(?:end)?|month|year)|(?P<wd>{_WD}){_TOD_EN})"
    r"|(?P<wbl>the\s+week\s+before\s+last)"
)
# 上个月, 这个月, 上个月15号 (but not 这个月饼); 去年, 前年 (but not 去年轻化)
_MONTH_ZH = (
    r"(?P<w>上上|上|这|本|下)个?(?P<u>月)(?![饼亮光球季嫂票台牙子历色])"
    rf"(?:(?P<d>{_DAY_ZH})[号日](?![0-9]))?"
)
_YEAR_ZH = r"(?P<w>大前|前|去|今|明)(?P<u>年)(?![轻纪代龄级华头])"
# 2023年, 2023年5月, 2023年5月3日 (but not 2000年前, "2000 years ago")
_YMD_ZH = (
    rf"(?<![0-9]){_YEAR}年(?:(?P<m>{_DAY_ZH})月(?![0-9])"
    rf"(?:(?P<d>{_DAY_ZH})[日号](?![楼线]){_TOD_ZH})?|(?![前后内里来间代以之]))"
)
_DATE_EN = rf"{_PRE}(?P<atom>{_plain(_EN_MD)}|{_plain(_EN_DM)}|{_plain(_EN_MY)})"
_IN_YEAR = rf"(?:(?:in|during)\s+(?:the\s+year\s+)?|the\s+year\s+){_YEAR}"

# Tried at every position; the earliest match wins, then the longest, then the first here.
_COUNTED_WEEKS = r"[0-9一两二三四五六七八九十几半整每]+个?(?:周|星期|礼拜)"  # 一周三次, 每周三
_RULES: list[tuple[re.Pattern[str], _Resolver]] = [
    (re.compile(rf"{_alt(_ZH_BLOCK)}|{_COUNTED_WEEKS}"), _blocked),
    (_en(_EN_BLOCK), _blocked),
    (_en(_RANGE), _range),
    (re.compile(rf"(?P<rel>{_REL_ZH}){_TOD_ZH}"), _relative_day),
    (_en(rf"(?P<rel>{_REL_EN}){_TOD_EN}"), _relative_day),
    (re.compile(_AGO_ZH), _ago),
    (_en(rf"(?P<n>{_NUM_EN})\s+(?P<u>days?|weeks?|months?|years?)\s+ago"), _ago),
    (re.compile(_WEEK_ZH), _relative_period),
    (re.compile(rf"(?:周|星期|礼拜){_WD_ZH_SPAN}{_TOD_ZH}"), _bare_weekday),
    (_en(_PERIOD_EN), _relative_period),
    (_en(rf"{_PRE}(?P<wd>{_WD}){_TOD_EN}"), _bare_weekday),
    (re.compile(_MONTH_ZH), _relative_period),
    (re.compile(_YEAR_ZH), _relative_period),
    (re.compile(_YMD_ZH), _absolute),
    (re.compile(rf"(?<![0-9年{_CN}])(?P<atom>{_plain(_ZH_MD)}){_TOD_ZH}"), _absolute),
    (re.compile(rf"(?P<atom>{_plain(_ISO)})"), _absolute),
    (_en(_DATE_EN), _absolute),
    (_en(_IN_YEAR), _absolute),
]


def _open_ended(text: str, m: re.Match[str]) -> bool:
    """'since May 3', 'before yesterday', '去年以来', '从昨天开始' are not windows."""
    b, e = m.span()
    return bool(
        _EN_OPEN.search(text, max(0, b - 12), b)
        or _ZH_OPEN.match(text, e)
        or (_ZH_FROM.search(text, 0, b) and _ZH_ON.match(text, e))
    )


def _rank(m: re.Match[str]) -> tuple[int, int]:
    return m.start(), -m.end()


def _find(text: str, today: date) -> tuple[re.Match[str], _Days] | None:
    """The first well-formed expression: earliest start, then longest, then rule order."""
    pos = 0
    while pos < len(text):
        best: tuple[re.Match[str], _Resolver] | None = None
        for pattern, resolve in _RULES:
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


# --- time-only detection ---------------------------------------------------------------------

_FILLER_ZH = re.compile(_alt(
    "发生了什么事情 发生了什么 发生什么 发生了啥 都做了什么 都干了什么 做了什么 干了什么 做了啥 "
    "干了啥 干嘛了 干嘛 做什么 干什么 有什么事 有什么 有啥 怎么样 怎么了 过得 的事情 的事 事情 "
    "什么事 啥事 日记 记录 记了什么 写了什么 回顾 总结 看看 查看 显示 列出 告诉我 一下 我们 什么 "
    "聊了些什么 聊了什么 聊过什么 聊了 聊过 聊天 聊 谈了 谈过 谈 讨论了 讨论 说了 说过 "
    "话题 内容 咱们 "
    "啥 哪些 情况 我 了 的 呢 吗 啊 吧 都 在 是 有 么 嘛 呀 哦 做 干".split()
))  # fmt: skip
_FILLER_EN = frozenset(
    "what whats happened happen happening did do does doing done i me my we us our you the a an "
    "on in at of for during was were is are be been there anything something everything show "
    "list tell give about event events entry entries diary note notes journal log logs went go "
    "going up so and all any have has had get got please can could would recap summary summarize "
    "summarise memory memories day how s ve d ll m it that talk talked talking chat chatted "
    "chatting discuss discussed discussing topic topics conversation conversations say said "
    "remember".split()
)


def _is_time_only(rest: str) -> bool:
    """True when `rest` holds nothing but filler ("发生了什么", "what happened", "?")."""
    words = re.findall(r"[^\W_]+", _FILLER_ZH.sub(" ", rest.lower().replace("'", " ")))
    return all(w in _FILLER_EN for w in words)


# --- public API ------------------------------------------------------------------------------


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


def _iso_day(value: object, name: str) -> date:
    shape = "expected 'YYYY-MM-DD', e.g. '2026-07-24'"
    if not isinstance(value, str) or not re.fullmatch(r"[0-9]{4}-[0-9]{2}-[0-9]{2}", value):
        raise ValueError(f"time_range {name} {value!r} is not a date; {shape}")
    try:
        return date.fromisoformat(value)
    except ValueError:
        raise ValueError(f"time_range {name} {value!r} is not a calendar date; {shape}") from None


def parse_date_pair(start: str, end: str) -> tuple[date, date]:
    """Two ISO day strings -> dates; ValueError naming the bad value, or if start > end."""
    first, last = _iso_day(start, "start"), _iso_day(end, "end")
    if first > last:
        raise ValueError(f"time_range start {start!r} is after end {end!r}; expected start <= end")
    return first, last
