"""parse never raises, and the fast heading scan agrees with markdown-it-py."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from wikimem_watch.core.parse import _MD, headings, parse_note

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
    tokens = _MD.parse(body)
    return [
        (tok.map[0], int(tok.tag[1]), tokens[i + 1].content.strip())
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
