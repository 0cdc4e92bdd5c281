"""Time-expression fast path: zh/en query text -> an inclusive window of local days.

This package owns the *parsed* half of the time gate (DESIGN.md §3): given a query and a
reference ``now`` it finds the first well-formed time expression and returns its window
(optionally with times of day), the matched span, and the query with those words removed
(the text BM25 scores). It is pure (no I/O) and standard-library only.

It is deliberately narrow. A wrong window hides the memory the user wants, while a missing
one only costs ranking quality (recency decay covers vague wording), so vague, open-ended
or ambiguous wording opens no window. The semantics are recorded in docs/adr/0003.

Modules, along the data flow: ``vocab`` (words and numbers), ``atoms`` (written dates shared
by both languages), ``zh`` and ``en`` (grammar: patterns, look-alikes, filler),
``resolvers`` (what a match means), ``periods`` (calendar arithmetic), ``core`` (the rule
table and the search), ``window`` (the output record and explicit day pairs), ``sessions``
(the first or last conversation, which the gate resolves against the vault's diary days).
"""

from __future__ import annotations

from .core import is_time_only, parse_time_range
from .sessions import SessionRef, find_session
from .window import TimeWindow, parse_date_pair

__all__ = [
    "SessionRef",
    "TimeWindow",
    "find_session",
    "is_time_only",
    "parse_date_pair",
    "parse_time_range",
]
