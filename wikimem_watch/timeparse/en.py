"""English grammar: the patterns for en time expressions, the phrases that only look like
one, and the filler words that make a question "time only".

Patterns only; what each match means is decided in ``resolvers``.
"""

from __future__ import annotations

import re

from .atoms import EN_DM, EN_MD, EN_MY, RANGE, WD, YEAR
from .vocab import EN_TENS, EN_UNITS, alt, plain

TOD_EN = r"(?:\s+(?:in\s+the\s+)?(?P<tod>morning|afternoon|evening|night))?"
_UNITS = alt(EN_UNITS[1:10])
_NUM = rf"(?:[0-9]{{1,4}}|(?:{alt(EN_TENS)})(?:[-\s](?:{_UNITS}))?|{alt(EN_UNITS)}|an?)"
_PRE = r"(?:(?:on|in|during)\s+)?"  # inside the span, so `rest` loses the preposition too


def bounded(pattern: str) -> re.Pattern[str]:
    """English rules: case-insensitive, bounded by non-alphanumerics on both sides."""
    return re.compile(rf"(?<![a-z0-9])(?:{pattern})(?![a-z0-9])", re.I)


BLOCK = bounded(
    r"the\s+(?:last|past|previous)\s+(?:few\s+)?(?:days?|weeks?|weekends?|months?|years?)"
    r"|(?:last|first|final)\s+(?:day|week|weekend|month)s?\s+of"
    rf"|(?:next|every|each|(?:this\s+)?coming)\s+(?:{WD})s?"
    rf"|(?:{WD})\s*(?:-|–|to|through|thru|till|until)\s*(?:{WD})|sunday\s+school"
)
# Open-ended wording before an expression ("since May 3") is not a window.
OPEN_BEFORE = re.compile(r"(?<![a-z])(?:since|after|before|until|till|prior\s+to)\s+$", re.I)

DATE_RANGE = bounded(RANGE)
REL = bounded(
    r"(?P<rel>(?:the\s+)?day\s+(?:before\s+yesterday|after\s+tomorrow)|yesterday|today|tomorrow"
    rf"|tonight|last\s+night|this\s+(?:morning|afternoon|evening)){TOD_EN}"
)
AGO = bounded(rf"(?P<n>{_NUM})\s+(?P<u>days?|weeks?|months?|years?)\s+ago")
PERIOD = bounded(
    rf"(?P<w>last|this|next)\s+(?:(?P<u>week(?:end)?|month|year)|(?P<wd>{WD}){TOD_EN})"
    r"|(?P<wbl>the\s+week\s+before\s+last)"
)
WEEKDAY = bounded(rf"{_PRE}(?P<wd>{WD}){TOD_EN}")
DATE = bounded(rf"{_PRE}(?P<atom>{plain(EN_MD)}|{plain(EN_DM)}|{plain(EN_MY)})")
IN_YEAR = bounded(rf"(?:(?:in|during)\s+(?:the\s+year\s+)?|the\s+year\s+){YEAR}")

FILLER = frozenset(
    "what whats happened happen happening did do does doing done i me my we us our you the a an "
    "on in at of for during was were is are be been there anything something everything show "
    "list tell give about event events entry entries diary note notes journal log logs went go "
    "going up so and all any have has had get got please can could would recap summary summarize "
    "summarise memory memories day how s ve d ll m it that".split()
)
