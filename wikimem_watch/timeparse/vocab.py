"""Words the parser knows (zh and en) and how numbers written in them are read.

Tables only, plus the two number readers and the regex helpers every rule module uses.
"""

from __future__ import annotations

import calendar
import re
import sys
from collections.abc import Iterable
from datetime import time

# Times of day, as wide, overlapping ranges: an 11:30 entry answers both 上午 and 中午.
TOD: dict[str, tuple[time, time]] = {}
for _words, _span in (
    ("早上 上午 早晨 清晨 morning", (time(6), time(12))),
    ("中午", (time(11), time(14))),
    ("下午 afternoon", (time(12), time(18))),
    ("傍晚", (time(17), time(19))),
    ("晚上 夜里 夜晚 evening night", (time(18), time(23, 59))),
    ("凌晨", (time(0), time(6))),
):
    TOD.update(dict.fromkeys(_words.split(), _span))

# Relative days; the compact forms carry their own time of day.
REL_DAY = {"大前天": -3, "前天": -2, "昨天": -1, "昨日": -1, "今天": 0, "今日": 0, "明天": 1,
           "明日": 1, "后天": 2, "大后天": 3, "day before yesterday": -2, "yesterday": -1,
           "today": 0, "tomorrow": 1, "day after tomorrow": 2}  # fmt: skip
REL_TOD = {"昨晚": (-1, "晚上"), "昨夜": (-1, "晚上"), "今晚": (0, "晚上"), "明晚": (1, "晚上"),
           "今早": (0, "早上"), "今晨": (0, "早上"), "明早": (1, "早上"), "tonight": (0, "night"),
           "last night": (-1, "night"), "this morning": (0, "morning"),
           "this afternoon": (0, "afternoon"), "this evening": (0, "evening")}  # fmt: skip
OFFSET = {"上上": -2, "上": -1, "本": 0, "这": 0, "下": 1, "下下": 2, "大前": -3, "前": -2,
          "去": -1, "今": 0, "明": 1, "last": -1, "this": 0, "next": 1}  # fmt: skip
# A week counted within a month ("the second week of July", 7月第二周); -1 is the last.
NTH_WEEK = {"first": 1, "second": 2, "third": 3, "fourth": 4, "fifth": 5, "sixth": 6,
            "last": -1, "final": -1, "最后": -1}  # fmt: skip
WD_EN = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
WD_ZH = {"一": 0, "二": 1, "三": 2, "四": 3, "五": 4, "六": 5, "日": 6, "天": 6}
MONTH_NO = {name: i for i, full in enumerate(calendar.month_name[1:], 1)
            for name in (full.lower(), full[:3].lower())} | {"sept": 9}  # fmt: skip
CN = "零〇一二两三四五六七八九十"
CN_DIGIT = {c: i for i, c in enumerate("零一二三四五六七八九")} | {"〇": 0, "两": 2}
EN_UNITS = ("zero one two three four five six seven eight nine ten eleven twelve thirteen "
            "fourteen fifteen sixteen seventeen eighteen nineteen").split()  # fmt: skip
EN_TENS = "twenty thirty forty fifty sixty seventy eighty ninety".split()
UNIT = {"天": "day", "日": "day", "周": "week", "期": "week", "拜": "week", "月": "month",
        "年": "year"}  # fmt: skip
# How far back "N units ago" may reach before it reads as a quantity, not a date.
AGO_MAX = {"day": 3660, "week": 520, "month": 1200, "year": 200}


def alt(words: Iterable[str]) -> str:
    """Regex alternation, longest first so that 'seventeen' is tried before 'seven'."""
    return "|".join(re.escape(w) for w in sorted(words, key=len, reverse=True))


class LazyPattern:
    """A regex compiled on its first use. The grammar holds ~50 patterns that took ~25 ms to
    compile at import, and the needle prefilter (``core``) runs one or two for most queries;
    a daemon compiles none before it is ready."""

    __slots__ = ("_compiled", "flags", "pattern")

    def __init__(self, pattern: str, flags: int = 0) -> None:
        self.pattern = pattern
        self.flags = flags
        self._compiled: re.Pattern[str] | None = None

    def compiled(self) -> re.Pattern[str]:
        if self._compiled is None:  # two threads may both compile it: the same pattern
            self._compiled = re.compile(self.pattern, self.flags)
        return self._compiled

    def search(self, text: str, pos: int = 0, endpos: int = sys.maxsize) -> re.Match[str] | None:
        return self.compiled().search(text, pos, endpos)

    def match(self, text: str, pos: int = 0, endpos: int = sys.maxsize) -> re.Match[str] | None:
        return self.compiled().match(text, pos, endpos)

    def fullmatch(self, text: str) -> re.Match[str] | None:
        return self.compiled().fullmatch(text)

    def sub(self, repl: str, text: str) -> str:
        return self.compiled().sub(repl, text)


def plain(pattern: str) -> str:
    """The pattern without named groups, so date atoms can be embedded twice in a range."""
    return re.sub(r"\(\?P<\w+>", "(?:", pattern)


def num(text: str) -> int:
    """ASCII digits or a Chinese numeral below 100 (十五, 二十, 两); ValueError otherwise."""
    if text.isascii() and text.isdigit():
        return int(text)
    tens, ten, units = text.partition("十") if "十" in text else ("", "", text)
    digits = set(tens + units)  # 两 and 零 stand alone: 十两, 两十, 十零 are not numerals
    digits_ok = digits <= CN_DIGIT.keys() and not (ten and digits & set("两零〇"))
    if len(tens) > 1 or len(units) > 1 or not (ten or units) or not digits_ok:
        raise ValueError(f"not a number: {text!r}")
    high = (CN_DIGIT[tens] if tens else 1) if ten else 0
    return high * 10 + (CN_DIGIT[units] if units else 0)


def ordinal(text: str) -> int:
    """'second', '2nd', '二', '2' -> 2; 'last', 'final', '最后' -> -1."""
    text = text.lower()
    return NTH_WEEK[text] if text in NTH_WEEK else num(text.rstrip("stndrh"))


def en_num(text: str) -> int:
    """'a', 'three', 'twenty-one' (digits go through num)."""
    words = text.lower().replace("-", " ").split()
    if words[0] in ("a", "an"):
        return 1
    if words[0] in EN_UNITS:
        return EN_UNITS.index(words[0])
    return 20 + 10 * EN_TENS.index(words[0]) + (EN_UNITS.index(words[1]) if words[1:] else 0)


def weekday(name: str) -> int:
    """Monday = 0 for '三', '日', 'Wednesday' and the like."""
    name = name.lower()
    return WD_ZH[name] if name in WD_ZH else WD_EN.index(name)
