"""Date atoms shared by both languages: one calendar day or month, and a range of two.

An atom is a regex for one written date (ISO, 5月3日, May 3, 3 May, August 2023, a bare
day). Single-date rules embed them, and ``RANGE`` embeds two ("between A and B", "从A到B").
``parse_atom`` reads a matched atom back into (year, month, day).
"""

from __future__ import annotations

import re

from .vocab import CN, MONTH_NO, WD_EN, LazyPattern, alt, num, plain

NUM_ZH = rf"(?:[0-9]{{1,4}}|[{CN}]{{1,3}})"
DAY_ZH = rf"(?:[0-9]{{1,2}}|[{CN}]{{1,3}})"
WD = alt(WD_EN)
MON = alt(MONTH_NO)
YEAR = r"(?P<y>(?:19|20|21)[0-9]{2})(?![0-9])"
YEARS = range(1900, 2200)  # the years YEAR reads
# After a day, any four digits are its year: "July 4, 1776" is read whole and refused by
# ``parse_atom``, so no July 4 of a recent year is opened in its place.
_DAY_YEAR = r"(?P<y>[0-9]{4})(?![0-9])"
# Not before 月: the 6 of "5月3日到6月" is June, not the 6th (a range's bare second day).
DAY = r"(?P<d>[0-9]{1,2})(?:st|nd|rd|th)?(?![0-9a-z月])"

# Groups: y, m | mn, d | zd.
ISO = rf"(?<![0-9]){YEAR}[-/](?P<m>[0-9]{{1,2}})[-/](?P<d>[0-9]{{1,2}})(?![0-9])"
ZH_MD = rf"(?:{YEAR}年)?(?P<m>{DAY_ZH})月(?P<d>{DAY_ZH})[日号](?![楼线])"
EN_MD = rf"(?:(?:{WD}),?\s+)?(?P<mn>{MON})\.?\s+(?:the\s+)?{DAY}(?:,?\s+{_DAY_YEAR})?"
EN_DM = (
    rf"(?:(?:{WD}),?\s+)?(?:the\s+)?{DAY}\s+(?:of\s+)?(?P<mn>{MON})(?![a-z])\.?"
    rf"(?:,?\s+{_DAY_YEAR})?"
)
EN_MY = rf"(?P<mn>{MON})\.?,?\s+(?:of\s+)?{YEAR}"
BARE_DAY = rf"(?:(?P<zd>{DAY_ZH})[日号]|{DAY}(?:,?\s+{_DAY_YEAR})?)"
_ATOMS = [LazyPattern(p, re.I) for p in (ISO, ZH_MD, EN_MD, EN_DM, EN_MY, BARE_DAY)]
ATOM = "|".join(plain(p) for p in (ISO, ZH_MD, EN_MD, EN_DM, EN_MY))
# "between A and B", "from A to B", "A - B", "从A到B"; B may be a bare day ("August 11-15",
# "from May 1st to the 3rd"), and A may be one when B names the month ("between 20 and 22
# November", "20-22 Nov 2023", "from the 1st to the 3rd of May").
_EN_BARE_DAY = r"[0-9]{1,2}(?:st|nd|rd|th)?(?![0-9a-z])"
# "May 3 last year", "from the 1st to the 3rd of May, this year": a year named by a word.
YEAR_WORD = r"(?:,?\s+(?:of\s+)?(?P<yw>last|this|next)\s+year(?![a-z]))"
# "from July 1st to 2 days ago", 7月1日到2天前: the 2 counts days, it is no bare day.
_NOT_A_COUNT = (
    r"(?!\s*(?:(?:days?|weeks?|fortnights?|months?|years?)(?![a-z])"
    r"|[天日周年]|个|星期|礼拜))"
)
RANGE = (
    rf"(?:(?P<btw>between\s+)|from\s+|从)?(?:the\s+)?(?P<a>{ATOM}|{_EN_BARE_DAY})\s*"
    r"(?(btw)and|(?:到|至|to|until|till|through|thru|-|–|—|~|～))"
    rf"\s*(?:the\s+)?(?P<b>{ATOM}|{plain(BARE_DAY)}){_NOT_A_COUNT}{YEAR_WORD}?"
)


def parse_atom(text: str) -> tuple[int | None, int | None, int | None]:
    """(year, month, day) of one date atom; month None for a bare day, day None for a month."""
    for atom in _ATOMS:
        if found := atom.fullmatch(text):
            g = found.groupdict()
            month = num(g["m"]) if g.get("m") else None
            if g.get("mn"):
                # Lower-case 'may'/'march' count only with a number after them ('I may go').
                tail = text[found.end("mn") :]
                if g["mn"] in ("may", "march") and not re.match(r"\.?,?\s+(?:of\s+)?\d", tail):
                    raise ValueError(f"lower-case {g['mn']!r} without a number after it")
                month = MONTH_NO[g["mn"].lower()]
            day = g.get("d") or g.get("zd")
            year = int(g["y"]) if g.get("y") else None
            if year is not None and year not in YEARS:
                raise ValueError(f"year {year} outside {YEARS.start}-{YEARS.stop - 1}")
            return year, month, num(day) if day else None
    raise ValueError(f"not a date: {text!r}")
