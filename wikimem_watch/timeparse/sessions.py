"""Conversations named by their order: "our first conversation", "上次我们聊了什么".

A companion's diary is a log of conversations, a day file each, and people ask about them by
their order as often as by their date. These words name no calendar date, so
``parse_time_range`` leaves them alone (``parse-time`` stays a calendar parser); the gate
resolves a reference found here against the vault's diary days (ADR-0003, addendum).

As narrow as the rest of the parser. The words must name a conversation: "上次看牙医" and "the
last time I ran" are not one. And "the first time we talked about cooking" is the first
conversation *about cooking*, not the first conversation, so a verb form ("the last time we
talked", "我们上次聊") counts only when nothing but filler is left beside it; a noun form
("our first conversation", "第一次对话") names the conversation whatever else is asked.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from .core import is_time_only
from .vocab import LazyPattern

Which = Literal["first", "last"]

_ZH_NOUN = r"(?:对话|聊天|谈话|交谈)"
_EN_NOUN = r"(?:conversation|chat)"
_EN_VERB = r"(?:talked|spoke|chatted)"
# (words one of which every match holds, pattern, which conversation, whether it is a noun
# form): a query holding none of them costs substring tests, not a regex search per rule.
_RULES: tuple[tuple[tuple[str, ...], LazyPattern, Which, bool], ...] = (
    (("次",), LazyPattern(rf"(?:我们)?(?:第一次|头一次|初次)(?:的)?{_ZH_NOUN}"), "first", True),
    (
        ("上",),
        LazyPattern(rf"(?:我们)?(?:上次|上一次|上回)(?:我们)?(?:的)?{_ZH_NOUN}"),
        "last",
        True,
    ),
    (("次",), LazyPattern(r"(?:我们)?(?:第一次|头一次|初次)聊"), "first", False),
    (("上",), LazyPattern(r"(?:我们)?(?:上次|上一次|上回)(?:我们)?(?:聊|谈|说)"), "last", False),
    (("first",), LazyPattern(rf"\b(?:our|the) (?:very )?first {_EN_NOUN}\b", re.I), "first", True),
    (
        ("last", "previous"),
        LazyPattern(rf"\b(?:our|the) (?:last|previous) {_EN_NOUN}\b", re.I),
        "last",
        True,
    ),
    (
        ("first",),
        LazyPattern(rf"\b(?:the )?first time we {_EN_VERB}\b|\bwhen we first {_EN_VERB}\b", re.I),
        "first",
        False,
    ),
    (("last",), LazyPattern(rf"\b(?:the )?last time we {_EN_VERB}\b", re.I), "last", False),
    (  # "what did we talk about last time": the verb before, only filler beside it
        ("last",),
        LazyPattern(
            r"\b(?:talk(?:ed)?|chat(?:ted)?|speak|spoke|discuss(?:ed)?)(?: about)? last time\b",
            re.I,
        ),
        "last",
        False,
    ),
)


@dataclass(frozen=True, slots=True)
class SessionRef:
    """A conversation named by its order: which one, the words that named it, and the query
    without them (``time_only``: nothing but filler is left)."""

    which: Which
    matched: str
    rest: str
    time_only: bool


def find_session(text: str) -> SessionRef | None:
    """The first or last conversation that ``text`` names, or None (also for a verb form
    with content words beside it: "the last time we talked about cooking")."""
    folded = text.lower()
    for needles, pattern, which, noun in _RULES:
        if not any(n in folded for n in needles):
            continue
        found = pattern.search(text)
        if found is None:
            continue
        rest = text[: found.start()] + text[found.end() :]
        time_only = is_time_only(rest)
        if noun or time_only:
            return SessionRef(which, found.group(), rest, time_only)
    return None
