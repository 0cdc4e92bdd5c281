"""Which lines of a Markdown body are headings, exactly as CommonMark (markdown-it-py) reads
them, at a line scan's cost for the notes where nothing could hide or fake a heading.

Pure and linear in the input. The fast scan and markdown-it are held equal by a property test
(``tests/property/test_parse_props.py``); the parser and the write path both read headings
here, so a ``## `` inside a code fence is text for both.
"""

from __future__ import annotations

import re
from functools import cache

TYPE_CHECKING = False
if TYPE_CHECKING:
    from markdown_it import MarkdownIt
# Lines after which a "## " line might not be a top-level heading (code, HTML, quotes,
# setext underlines, indented headings that may belong to a list item, indented code).
# A one-line <!-- comment --> is safe: it cannot hide a line.
# Matched at the start and searched after each "\n" rather than as "^…" with re.M: a search
# for a literal "\n" skips from line to line, "^" is tried at every character.
_RISKY_LINE = r"(?: {0,3}(?:```|~~~|>|<(?!!--.*-->[ \t]*$)|(?:=+|-+)[ \t]*$)| {1,3}#| {4}|\t)"
_RISKY_FIRST = re.compile(_RISKY_LINE, re.M)
_RISKY_NEXT = re.compile("\n" + _RISKY_LINE, re.M)
_NEWLINE = re.compile(r"\n")


def headings(body: str) -> list[tuple[int, int, str]]:
    """Top-level headings as (0-based line, level, text), exactly as CommonMark reads them.

    Most notes hold nothing that could hide or fake a heading, and for those a line scan is the
    CommonMark answer at a fraction of the cost; anything else goes through markdown-it-py.
    A property test holds the two paths equal.
    """
    return [(line, level, text) for line, level, text, _ in heading_spans(body)]


def heading_spans(body: str) -> list[tuple[int, int, str, int]]:
    """:func:`headings`, each with the offset in ``body`` where its line starts."""
    out: list[tuple[int, int, str, int]] = []
    if not _risky(body):
        # No line of a safe note starts with spaces and then "#" (those are risky), so a
        # heading starts its line with "#": only those lines are looked at.
        line = last = 0
        start = 0 if body.startswith("#") else body.find("\n#") + 1  # 0: none (find gave -1)
        if start == 0 and not body.startswith("#"):
            return out
        while True:
            line += body.count("\n", last, start)
            last = start
            end = body.find("\n", start)
            if atx := _atx_heading(body[start:] if end < 0 else body[start:end]):
                out.append((line, *atx, start))
            if end < 0:
                break
            start = body.find("\n#", end) + 1
            if not start:
                break
        return out
    tokens = markdown_parser().parse(body)
    line_starts: list[int] | None = None
    for i, tok in enumerate(tokens):
        if tok.type == "heading_open" and tok.level == 0 and tok.map is not None:
            if line_starts is None:
                line_starts = [0, *(m.end() for m in _NEWLINE.finditer(body))]
            line = tok.map[0]
            text = tokens[i + 1].content.strip()
            if "\n" in text:  # a setext heading of several lines reads as one line
                text = " ".join(part.strip() for part in text.split("\n"))
            out.append((line, int(tok.tag[1]), text, line_starts[line]))
    return out


@cache
def markdown_parser() -> MarkdownIt:
    """The CommonMark parser, built on first use: importing markdown-it costs a start ~25 ms,
    and a start from the index snapshot (or a note with nothing risky) never needs it."""
    from markdown_it import MarkdownIt

    # Only block structure matters (which lines are headings), so inline parsing is off.
    return MarkdownIt("commonmark").disable(["inline", "text_join"])


def _risky(body: str) -> bool:
    """True when a line of ``body`` could hide or fake a heading (then markdown-it reads it)."""
    return _RISKY_FIRST.match(body) is not None or _RISKY_NEXT.search(body) is not None


def _atx_heading(line: str) -> tuple[int, str] | None:
    """markdown-it's ATX heading rule for one line: (level, text), or ``None``.

    Written out rather than as a regex: ``(.*?)`` followed by an optional closing sequence
    backtracks quadratically over a long run of spaces or tabs.
    """
    if line.startswith("## ") and line.find("#", 3) < 0:
        return 2, line[3:].strip()  # the common case: no closing sequence can follow
    start = len(line) - len(line.lstrip(" "))
    pos = start
    while pos < len(line) and line[pos] == "#":
        pos += 1
    level = pos - start
    if start > 3 or not 1 <= level <= 6 or (pos < len(line) and line[pos] not in " \t"):
        return None
    end = max(len(line.rstrip(" \t")), pos)
    tail = end
    while tail > pos and line[tail - 1] == "#":
        tail -= 1
    if tail > pos and line[tail - 1] in " \t":
        end = tail  # a closing sequence: " ##" at the end of the line
    return level, line[pos:end].strip()
