"""English grammar: the patterns for en time expressions, the phrases that only look like
one, and the filler words that make a question "time only".

Patterns only; what each match means is decided in ``resolvers``.
"""

from __future__ import annotations

import re

from .atoms import EN_DM, EN_MD, EN_MY, RANGE, WD, YEAR, YEAR_WORD
from .vocab import EN_TENS, EN_UNITS, LazyPattern, alt, plain

TOD_EN = r"(?:\s+(?:in\s+the\s+)?(?P<tod>morning|afternoon|evening|night))?"
_UNITS = alt(EN_UNITS[1:10])
_NUM = rf"(?:[0-9]{{1,4}}|(?:{alt(EN_TENS)})(?:[-\s](?:{_UNITS}))?|{alt(EN_UNITS)}|an?)"
_PRE = r"(?:(?:on|in|during)\s+)?"  # inside the span, so `rest` loses the preposition too


def bounded(pattern: str) -> LazyPattern:
    """English rules: case-insensitive, bounded by non-alphanumerics on both sides."""
    return LazyPattern(rf"(?<![a-z0-9])(?:{pattern})(?![a-z0-9])", re.I)


_MONTH_NAME = r"january|february|march|april|may|june|july|august|september|october|november"
_MONTH_NAME += r"|december|jan|feb|mar|apr|jun|jul|aug|sept|sep|oct|nov|dec"
# "the first week", "2nd week": a week counted within a month.
_NTH_NOT_LAST = r"first|second|third|fourth|fifth|sixth|[0-9]{1,2}(?:st|nd|rd|th)"
_NTH = rf"{_NTH_NOT_LAST}|last|final"

# Holidays and other names built on a weekday: "Good Friday" is no recent Friday.
_HOLIDAY = r"(?:good|black|cyber|easter|ash|palm|holy|maundy|fat|bloody|super\s+bowl)"
BLOCK = bounded(
    r"the\s+(?:last|past|previous)\s+(?:few\s+|several\s+|couple\s+(?:of\s+)?)?"
    r"(?:days|weeks|weekends?|months|years|day)"
    r"|the\s+previous\s+(?:week|month|year)"
    r"|(?:last|first|final)\s+(?:day|weekend|month)s?\s+of"
    # "the second week of July", "the last week in June": the month's context reads the week
    # (``NTH_WEEK_BEFORE``); blocked here so "last week" is neither the previous Monday–Sunday
    # week nor the past seven days.
    rf"|(?:{_NTH_NOT_LAST})\s+weeks?"
    rf"|(?:the\s+)?last\s+weeks?(?=\s+of(?![a-z])|\s+in\s+(?:{_MONTH_NAME})(?![a-z]))"
    rf"|(?:next|every|each|(?:this\s+)?coming)\s+(?:{WD})s?"
    rf"|(?:{WD})\s*(?:-|–|to|through|thru|till|until)\s*(?:{WD})|sunday\s+school"
    rf"|{_HOLIDAY}\s+(?:{WD})|(?-i:Super\s+Tuesday)"  # primaries, capitalised
    # Names with a time word in them: papers, shows, holidays.
    r"|usa\s+today|today\s+(?:show|programme)|(?:mail|independent|observer)\s+on\s+sunday"
    r"|(?:(?:in|on|at|for|during)\s+)?(?:the\s+)?"
    r"(?:fourth\s+of\s+july|ides\s+of\s+march|may\s+day|ruby\s+tuesday|man\s+friday)"
)
# "by July 21", "later than May 3": a bound, which opens no window (as "before" does).
BOUND_BEFORE = LazyPattern(r"(?<![a-z])(?:by|up\s+to|earlier\s+than|later\s+than)\s+$", re.I)
# "about 3 days ago", "2 or 3 days ago": a count made approximate, no window (as "X左右").
# Only before an expression that starts with its number ("talk about yesterday" is a day).
APPROX_BEFORE = LazyPattern(
    r"(?<![a-z])(?:about|around|approximately|roughly|maybe|perhaps|nearly|almost|some"
    r"|at\s+least|at\s+most|more\s+than|less\s+than|over"
    r"|(?:[0-9]+|an?|one|two|three|four|five|six|seven|eight|nine|ten|a\s+few)\s+or)\s+$",
    re.I,
)
# "around last Tuesday", "roughly May 3": a day give or take one (``core._around``), as
# 大概上周二 and 上周二左右 are. Not "about", which before a day is mostly the topic ("talk
# about yesterday").
AROUND_BEFORE = LazyPattern(r"(?<![a-z])(?:around|approximately|roughly|circa)\s+$", re.I)
STARTS_WITH_NUMBER = LazyPattern(
    r"(?:[0-9]|(?:an?|one|two|three|four|five|six|seven|eight|nine|ten|a\s+few)(?![a-z]))", re.I
)
# Context around an expression: "since May 3" runs to today; "before May 3" is no window.
SINCE_BEFORE = LazyPattern(r"(?<![a-z])(?:ever\s+)?since\s+$", re.I)
FROM_BEFORE = LazyPattern(r"(?<![a-z])from\s+$", re.I)
TO_NOW_AFTER = LazyPattern(
    r"\s+(?:to|until|till|through|up\s+to)\s+(?:now|today|date|(?:the\s+)?present)(?![a-z0-9])",
    re.I,
)
OPEN_BEFORE = LazyPattern(r"(?<![a-z])(?:after|before|until|till|prior\s+to)\s+$", re.I)
# "a week from today", "3 days from yesterday": a day counted off from it (most often ahead),
# never the day itself. No window, as "a week after May 3" is none.
OFFSET_BEFORE = LazyPattern(
    r"(?<![a-z])(?:days?|weeks?|fortnights?|months?|years?)\s+(?:from|after|before)\s+$", re.I
)
# "the week of July 20": the Monday–Sunday week that holds the day. Before a span ("the
# week of last month") it opens none: which week is meant is not computed.
WEEK_OF_BEFORE = LazyPattern(r"(?:(?<![a-z])the\s+|^\s*)week\s+of\s+$", re.I)  # not "a week of"
# "the second week of July", "the last week of last month", "July's first week": that week
# of the month (``periods.week_of_month``); "between the first and (the) second week of May",
# "from the first week to the third week of July", "the first and second weeks of May": those
# weeks and the ones between them.
_NTH_TO = r"\s+(?:and|or|to|through|thru|till|until)\s+|\s*[-–]\s*"
NTH_WEEK_BEFORE = LazyPattern(
    rf"(?:(?:(?<![a-z])(?:between|from)\s+)?(?:(?<![a-z])the\s+)?(?<![a-z0-9])"
    rf"(?P<nth1>{_NTH})(?:\s+weeks?)?(?:{_NTH_TO})(?:the\s+)?"
    rf"|(?:(?<![a-z])(?:in|during)\s+)?(?:(?<![a-z])the\s+)?(?<![a-z0-9]))"
    rf"(?P<nth>{_NTH})\s+weeks?\s+(?:(?:of|in)\s+)?$",
    re.I,
)
# "to the second week of June": a range's second end that counts a week of the month after
# it (``core._span_to``).
NTH_WEEK_LEAD = LazyPattern(rf"(?:the\s+)?(?:{_NTH})\s+week\s+(?P<of>(?:of|in)\s+)", re.I)
NTH_WEEK_AFTER = LazyPattern(rf"(?:'s|’s)\s+(?P<nth>{_NTH})\s+week(?![a-z])", re.I)
# "this day last year", "on this day a month ago", "a year ago today": that period's day
# that is today's date (as 去年的今天).
SAME_DAY_BEFORE = LazyPattern(r"(?<![a-z])(?:on\s+)?this\s+(?:very\s+)?day,?\s+$", re.I)
SAME_DAY_AFTER = LazyPattern(r"\s+today(?![a-z])", re.I)  # not ", today": a new clause
# "my last 3 days in Paris", "her past two weeks": a period of something else, not of now.
OWNER_BEFORE = LazyPattern(r"(?<![a-z])(?:my|our|your|his|her|their|its|those|these)\s+$", re.I)

DATE_RANGE = bounded(RANGE)
REL = bounded(
    r"(?P<rel>(?:the\s+)?day\s+(?:before\s+yesterday|after\s+tomorrow)|yesterday|today|tomorrow"
    rf"|tonight|last\s+night|this\s+(?:morning|afternoon|evening)){TOD_EN}"
)
AGO = bounded(rf"(?P<n>{_NUM})\s+(?P<u>days?|weeks?|months?|years?)\s+ago")
PERIOD = bounded(
    rf"(?P<w>last|this|next)\s+(?:(?P<u>week(?:end)?|month|year)|(?P<wd>{WD}){TOD_EN})"
    r"|(?P<wbl>the\s+week\s+before\s+last)"
    rf"|(?:the\s+)?(?P<wdbl>{WD})\s+before\s+last(?![a-z])"  # in the week before last
)
# "Monday the 20th" names its day of the month too ("Friday the 13th" is rarely last Friday).
_OF_MONTH = r"(?:,?\s+the\s+(?P<dom>[0-9]{1,2})(?:st|nd|rd|th)?(?![0-9a-z]))?"
WEEKDAY = bounded(rf"{_PRE}(?P<wd>{WD}){_OF_MONTH}{TOD_EN}")
DATE = bounded(rf"{_PRE}(?P<atom>{plain(EN_MD)}|{plain(EN_DM)}|{plain(EN_MY)}){YEAR_WORD}?")
IN_YEAR = bounded(rf"(?:(?:in|during)\s+(?:the\s+year\s+)?|the\s+year\s+|(?<=since\s)){YEAR}")
# "the past 3 days", "last two weeks", "past week", "over the past month": rolling, to today.
ROLLING = bounded(
    r"(?:(?:in|over|during|within|for)\s+)?(?:(?:the\s+)?(?:past|last)\s+"
    rf"(?P<n>{_NUM})\s+(?P<u>days|weeks|months|years|day|week|month|year)"
    r"|(?:the\s+(?:past|last)|past)\s+(?P<u1>week|month|year))(?!\s+of(?![a-z]))"
)
# "Wednesday last week", "Wednesday of last week", "last week Wednesday", "last week's Wednesday"
WEEKDAY_OF_WEEK = bounded(
    rf"(?:on\s+)?(?P<wd>{WD}),?\s+(?:of\s+)?(?P<w>last|this|next)\s+week(?!end)"
    rf"|(?P<w2>last|this|next)\s+week(?:'s|’s)?,?\s+(?:on\s+)?(?P<wd2>{WD})"
)
# A month with no day or year needs a word that makes it a time: "in October", "during
# October", "of October", "early October", "since October"; "last October", "this October".
_NO_DATE_AFTER = r"\.?(?!\.?,?\s*(?:of\s+)?[0-9])(?!'s|’s)"
MONTH_IN = bounded(
    r"(?:(?:in|during|of|throughout)\s+(?:(?:early|late|mid)(?:-|\s+))?"
    r"|(?:early|late|mid)(?:-|\s+)|(?<=since\s))"
    rf"(?P<mn>{_MONTH_NAME}){_NO_DATE_AFTER}"
)
# "from May 3 to June", "to the end of June": a month named alone as a range's second end
# (``core._span_to``); the end (beginning, middle) of it is read as all of it, as "late June".
MONTH_AFTER_TO = bounded(
    rf"(?:the\s+(?:end|beginning|start|middle)\s+of\s+)?(?P<mn>{_MONTH_NAME}){_NO_DATE_AFTER}"
)
# "from last Monday to the 20th": a bare day as a range's second end; not "the 20th floor".
DAY_AFTER_TO = bounded(
    r"(?:the\s+)?(?P<d>[0-9]{1,2})(?:st|nd|rd|th)(?![0-9a-z])"
    r"(?!\s+(?:anniversary|birthday|century|floor|time|place|row|street|avenue|round|minute|hour"
    r"|day|week|month|year|century|edition|grade|page|chapter)s?(?![a-z]))"
)
# "July's second week": a month named only by the week after it (``NTH_WEEK_AFTER``).
MONTH_OF_NTH_WEEK = bounded(rf"(?P<mn>{_MONTH_NAME})(?=(?:'s|’s)\s+(?:{_NTH})\s+week(?![a-z]))")
MONTH_REL = bounded(rf"(?P<w>last|this)\s+(?P<mn>{_MONTH_NAME}){_NO_DATE_AFTER}")
# "in July last year", "March of this year": that month of that year (not the most recent
# July). Lower-case may/march/mar/august need a word before them ("in may last year"), else
# they are verbs ("I may this year").
MONTH_OF_YEAR = bounded(
    r"(?:(?:in|during|of|throughout)\s+(?:(?:early|late|mid)(?:-|\s+))?|(?:early|late|mid)(?:-|\s+)"
    r"|(?!(?-i:may|march|mar|august)(?![a-z])))"
    rf"(?P<mn>{_MONTH_NAME})\.?,?\s+(?:of\s+)?(?P<w>last|this|next)\s+year"
)
# Lower-case these are ordinary words ("I may go", "we march on", "august company").
AMBIGUOUS_MONTHS = frozenset({"may", "march", "mar", "august"})
# Lower-case "march 10" or "may 3" after a subject or a modal, or before a unit, is a verb and a
# count: "we march 10 miles", "they may 3 times", "soldiers march 20 km".
VERB_BEFORE = LazyPattern(
    r"(?<![a-z'’])(?:i|we|you|they|he|she|to|will|would|can|could|should|must|might|shall|"
    r"may|soldiers|troops)\s+$",
    re.I,
)
UNIT_AFTER = LazyPattern(
    r"\s*(?:miles?|km|kms|kilomet(?:er|re)s?|met(?:er|re)s?|m\b|steps?|laps?|times?|minutes?|"
    r"mins?|hours?|hrs?|days?|weeks?|blocks?|kg|kilos?|pounds?|lbs?|feet|foot|ft|yards?|reps?|"
    r"sets?|percent|%)(?![a-z])"
)
# "since May said", "a friend of June told me": a month name followed by such a verb is a
# person.
NAME_VERB_AFTER = LazyPattern(
    r"\s+(?:said|says|told|tells|asked|asks|thinks|thought|wants|wanted|went|came|called|"
    r"texted|sent|gave|got|bought|made|took|likes|liked|loves|loved|mentioned|suggested|"
    r"replied|wrote|visited|left|moved|arrived|died|married)(?![a-z])"
)
# "the Sunday Times", "a Friday market", "Monday's meeting": a weekday used as a name or an
# adjective. And a capitalised weekday directly followed by a capitalised word that is not a
# time word is a name ("Sunday Times", "Monday Night Football"); "Monday Morning" is a time.
ARTICLE_BEFORE = LazyPattern(r"(?<![a-z])(?:the|a|an)\s+$", re.I)
DOMAIN_AFTER = LazyPattern(r"\.[a-z]", re.I)  # "a Monday.com board": a web name
CAPITALISED_AFTER = LazyPattern(
    r" (?:(?:Morning|Afternoon|Evening|Night) )?"
    r"(?!(?:Morning|Afternoon|Evening|Night|I|I'm|I've|I'd|I'll)(?![A-Za-z'])"
    rf"|(?i:{_MONTH_NAME}|{WD})(?![a-z]))[A-Z]"
)

FILLER = frozenset(
    "what whats happened happen happening did do does doing done i me my we us our you the a an "
    "on in at of for during was were is are be been there anything something everything show "
    "list tell give about event events entry entries diary note notes journal log logs went go "
    "going up so and all any have has had get got please can could would recap summary summarize "
    "summarise memory memories day how s ve d ll m it that talk talked talking chat chatted "
    "chatting discuss discussed discussing topic topics conversation conversations say said "
    "remember".split()
)
