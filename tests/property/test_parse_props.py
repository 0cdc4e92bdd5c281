"""parse never raises, and the fast heading scan agrees with markdown-it-py."""

from __future__ import annotations

import re
from unittest import mock

from hypothesis import given, settings
from hypothesis import strategies as st

import wikimem_watch.core.headings as headings_module
import wikimem_watch.core.inline as inline_module
from wikimem_watch.core.headings import headings, markdown_parser
from wikimem_watch.core.parse import _sections, parse_note

# Lines a diary or note commonly holds (most take the fast line scan).
COMMON = [
    "## 08:15", "## Topic ##", "##", "## a #", "# Title", "### deep", "#tag line", "text",
    "####### x", "   ## indented three", "\\## escaped", "", "- item", "- ## in list", "1. one",
    "## 火锅 #", "* * *", "  text", "## trailing   ", "##\tfoo", "<!-- wikimem: a=1 -->",
    "a ## b", "#", "# ", "## ## ##", "## x \\#",
]  # fmt: skip
# Lines that can hide or fake a heading: any of these sends the note through markdown-it.
RISKY = [
    "    ## indented four", "```", "~~~", "```md", "<!-- open", "-->", "<div>", "</div>",
    "> ## quoted", "---", "===", "\t## tab", "Setext",
]  # fmt: skip
SAFE = st.lists(st.sampled_from(COMMON), max_size=25).map("\n".join)
DOCS = st.lists(st.sampled_from(COMMON + RISKY), max_size=25).map("\n".join)


def markdown_it_headings(body: str) -> list[tuple[int, int, str]]:
    """markdown-it's headings; a setext heading of several lines as one line."""
    tokens = markdown_parser().parse(body)
    return [
        (
            tok.map[0],
            int(tok.tag[1]),
            " ".join(x.strip() for x in tokens[i + 1].content.split("\n")),
        )
        for i, tok in enumerate(tokens)
        if tok.type == "heading_open" and tok.level == 0 and tok.map is not None
    ]


@settings(max_examples=400, deadline=None)
@given(st.one_of(SAFE, DOCS))
def test_fast_heading_scan_equals_markdown_it(body: str) -> None:
    assert headings(body) == markdown_it_headings(body)


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from(["diary/2026-01-01.md", "wiki/x.md", "diary/bad.md", "n.md"]),
    st.one_of(DOCS, st.text(max_size=300)),
)
def test_parse_never_raises_and_ids_are_unique(path: str, text: str) -> None:
    parsed = parse_note(path, text)
    ids = [e.id for e in parsed.entries]
    assert len(ids) == len(set(ids))
    assert all(e.line >= 1 for e in parsed.entries)


NOTE_LINES = [
    *COMMON,
    "<!-- wikimem: owner=a | ts=2026-01-01T08:00:00 -->", "[[Note#Head|alias]]", "#tag and `#code`",
    "", "", "prose line", "---", "title: T", "tags: [a, b, a]", "## 08:15", "## 08:15",
    "<div>", "</div>", "```", "~~~", "<!-- c -->", "text #t [[L]]",
]  # fmt: skip
NOTES = st.lists(st.sampled_from(NOTE_LINES), max_size=30).map("\n".join)


@settings(max_examples=400, deadline=None)
@given(
    st.sampled_from(["diary/2026-01-01.md", "wiki/x.md", "diary/bad.md", "n.md"]),
    st.one_of(NOTES, SAFE),
)
def test_notes_parse_the_same_through_the_fast_scan_and_markdown_it(path: str, text: str) -> None:
    """Headings through markdown-it, and each section's code (for its links and tags) too."""
    fast = parse_note(path, text)
    with (
        mock.patch.object(headings_module, "_risky", lambda body: True),
        mock.patch.object(inline_module, "_contained", lambda text: True),
    ):
        slow = parse_note(path, text)
    assert fast == slow


def sections_by_lines(body: str) -> tuple[str | None, int, list[tuple[str, int, str]]]:
    """The reference for ``_sections``: split into lines, join each section's lines back."""
    lines = body.split("\n")

    def heading_lines(line: int) -> int:  # a setext heading: its lines to the underline
        if lines[line][:4].lstrip(" ").startswith("#"):
            return 1
        end = line + 1
        while end < len(lines) and not re.fullmatch(r" {0,3}(?:=+|-+)[ \t]*", lines[end]):
            end += 1
        return end - line + 1

    title, title_lines, starts = None, (), []
    for line, level, text in headings(body):
        if level == 2:
            starts.append((line, text))
        elif level == 1 and not starts and title is None:
            title, title_lines = text, tuple(range(line, line + heading_lines(line)))
    out = []
    first = starts[0][0] if starts else len(lines)
    pre = [ln for j, ln in enumerate(lines[:first]) if j not in title_lines]
    if "\n".join(pre).strip():
        at = next(j for j, ln in enumerate(lines[:first]) if ln.strip() and j not in title_lines)
        out.append(("", at + 1, "\n".join(pre).strip("\n")))
    for n, (start, heading) in enumerate(starts):
        end = starts[n + 1][0] if n + 1 < len(starts) else len(lines)
        out.append((heading, start + 1, "\n".join(lines[start + heading_lines(start) : end])))
    return title, (title_lines[0] if title_lines else 0) + 1, out


@settings(max_examples=400, deadline=None)
@given(st.one_of(NOTES, DOCS, st.text(alphabet="#\n a`>-", max_size=60)))
def test_sections_are_the_slices_a_line_split_gives(body: str) -> None:
    title, title_line, sections = _sections(body, 0)
    got = (title, title_line, [(s.heading, s.line, s.body) for s in sections])
    assert got == sections_by_lines(body)


# The inline tag pattern as it was first written: its look-behind tried at every character.
_TAG_LOOKBEHIND_FIRST = re.compile(r"(?<![\w#&/=(\[\\])#(?P<tag>[^\W\d_][\w/-]*|\d+[^\W\d][\w/-]*)")


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet="#a1_/-=&([ \n\téé火`\\", max_size=40))
def test_the_tag_pattern_finds_what_a_look_behind_first_one_finds(text: str) -> None:
    from wikimem_watch.core.inline import _TAG

    def found(pattern: re.Pattern[str]) -> list[tuple[int, int, str]]:
        return [(*m.span(), m.group("tag")) for m in pattern.finditer(text)]

    assert found(_TAG) == found(_TAG_LOOKBEHIND_FIRST)
    assert _TAG.findall(text) == [tag for _, _, tag in found(_TAG_LOOKBEHIND_FIRST)]


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="\n \ta\u3000\x0b", max_size=20))
def test_blank_lines_fold_the_same_before_or_after_the_strip(raw: str) -> None:
    from wikimem_watch.core.parse import _BLANK_LINES

    stripped = raw.strip()
    assert _BLANK_LINES.sub("\n\n", raw).strip() == _BLANK_LINES.sub("\n\n", stripped)


# Lines around code blocks, and lines that open or close an HTML block (where markdown-it
# reads no fence: "<div>" then "```" is HTML, and the prose after the block's blank line too).
CODE_LINES = [
    "<div>", "</div>", "<pre>", "<!-- c -->", "<!-- open", "-->", "  <span>", "<br>", "a <b>",
    "```", "~~~", "````", "```py", "~~~~", "#tag1", "[[L]]", "`#x`", "text #t2", "", "  ```",
    "   ~~~", " #a", "- item", "- #b", "1. [[M]]", "    #d", "\t#e", "  #f", "```` x", "~~~ `y`",
    "``#z``", "#h3 ```", "---", "> q #c", "> ```", "- ```", "      #g", "### h", "***", "--",
    "===", "\t- sub #s", "    - sub [[S]]",
]  # fmt: skip


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(CODE_LINES), max_size=12).map("\n".join))
def test_the_fence_scan_blanks_the_code_markdown_it_reads(text: str) -> None:
    """Text with no quote, list-item fence or indented line takes the fence scan; it reads the
    same tags and links as markdown-it's reading of the code blocks (any other text's)."""
    from wikimem_watch.core.inline import (
        _LINK,
        _contained,
        _inline_tags,
        _outside_code_blocks,
        _without_code,
    )

    if _contained(text):
        return
    fast, slow = _without_code(text), _outside_code_blocks(text)
    assert _inline_tags(fast) == _inline_tags(slow)
    assert _LINK.findall(fast) == _LINK.findall(slow)
