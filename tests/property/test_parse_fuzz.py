"""The parser against adversarial Markdown: linear growth, and never a raise (ADR-0011).

Growth is measured within one run as a ratio (4x the input must cost at most 6x the CPU
time of this thread, the min of a few interleaved repeats), never as wall time. A quadratic
step gives ~16x.
``bench/fuzz.py --target parse`` runs the same fuzzing for longer.
"""

from __future__ import annotations

import gc
import re
import time
from collections.abc import Callable

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from wikimem_watch.core.headings import _atx_heading, markdown_parser
from wikimem_watch.core.parse import parse_meta, parse_note, strip_meta

RISKY = "> quote\n\n"  # sends a note through markdown-it instead of the fast line scan

# name → a note made of n repeats of an adversarial unit
FAMILIES: dict[str, Callable[[int], str]] = {
    "unclosed metadata comments": lambda n: "## a\n" + "<!-- wikimem: owner=x\n" * n,
    "unclosed comments on one line": lambda n: "## a\n" + "<!-- wikimem:" * n,
    "unclosed comments, markdown-it": lambda n: RISKY + "## a\n" + "<!-- wikimem: x\n" * n,
    "heading with a run of spaces": lambda n: "## a" + " " * (16 * n) + "x",
    "heading with spaces and tabs": lambda n: "## a" + " \t" * (8 * n) + "#x",
    "many [[": lambda n: "## a\n" + "[[x" * (3 * n),
    "nested brackets": lambda n: "## a\n" + "[" * (4 * n) + "]" * (4 * n),
    "many #": lambda n: "## a\n" + "#" * (8 * n),
    "many #tags with digits": lambda n: "## a\n" + " #1111111" * n,
    "a line of <!--": lambda n: RISKY + "<!--" * (2 * n),
    "backticks": lambda n: "## a\n" + "`" * (8 * n),
    "unclosed fences": lambda n: RISKY + "```x\n" * n,
    "mixed fences": lambda n: "## a\n" + "``` ~~~ " * n,
    "many headings": lambda n: "## a\n" * n,
    "setext headings": lambda n: "a\n===\n" * n,
    "nested quotes": lambda n: "".join(">" * (i % 40) + " a\n" for i in range(n)),
    "front matter, big": lambda n: "---\n" + "k: v\n" * n + "---\nbody\n",
    "front matter, unclosed": lambda n: "---\n" + "k: v\n" * n,
    "front matter, flow nesting": lambda n: "---\na: " + "[" * n + "]" * n + "\n---\n",
    "carriage returns": lambda n: "## a\r\n" * n,
    "blank lines": lambda n: "## a\n" + "x\n\n\n\n" * n,
    "pipes in metadata": lambda n: "## a\n<!-- wikimem: " + "|" * (8 * n) + " -->",
}
BASE_UNITS = 1200
GROWTH_BOUND = 8.0  # 4x the input: linear is 4x the time, quadratic 16x


def _best_time(text: str, repeats: int) -> float:
    """The least CPU time of this thread over ``repeats`` parses: other processes on a busy
    machine take wall time, not this thread's CPU time."""
    best = float("inf")
    for _ in range(repeats):
        started = time.thread_time()
        parse_note("wiki/fuzz.md", text)
        best = min(best, time.thread_time() - started)
    return best


def _growth(small: str, big: str) -> float:
    """CPU time of the 4× input over the 1× input, the least of interleaved runs."""
    gc.disable()
    try:
        t_small = t_big = float("inf")
        for _ in range(4):  # interleaved, so a busy moment hits both sizes alike
            t_small = min(t_small, _best_time(small, 2))
            t_big = min(t_big, _best_time(big, 1))
    finally:
        gc.enable()
    return t_big / max(t_small, 1e-6)


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_parse_time_grows_linearly(family: str) -> None:
    small, big = FAMILIES[family](BASE_UNITS), FAMILIES[family](4 * BASE_UNITS)
    parse_note("wiki/fuzz.md", small)  # warm caches
    # Linear growth is 4×, quadratic 16×: the bound is their geometric middle, 8×. (It was
    # 6×, which a busy machine crossed: a cache-thrashing neighbour slows this thread's CPU
    # too, and once took "unclosed fences" to 6.4×.) Three tries, the least counts.
    ratio = _growth(small, big)
    for _ in range(2):
        if ratio <= GROWTH_BOUND:
            break
        ratio = min(ratio, _growth(small, big))
    assert ratio <= GROWTH_BOUND, f"{family}: 4x input took {ratio:.1f}x the time"


# ---------------------------------------------------------------- differential tests

_OLD_META = re.compile(r"<!--\s*wikimem:(?P<body>.*?)-->", re.S)
META_PIECES = ["<!--", " ", "wikimem:", "-->", "a=1", "|", "x", "\n", "<!-- wikimem: b=2 -->"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(META_PIECES), max_size=30).map("".join))
def test_strip_meta_equals_the_regex_it_replaces(body: str) -> None:
    def keep_if_a(inner: str) -> bool:
        return "a" in inner

    expected = _OLD_META.sub(lambda m: "" if keep_if_a(m.group("body")) else m.group(), body)
    assert strip_meta(body, keep_if_a) == expected


ATX_PIECES = ["#", "##", " ", "\t", "a", "\\", "#a", " #", "x y"]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(ATX_PIECES), max_size=12).map("".join))
@example("##  a")
@example("## a \t")
@example("## a #")
@example("##\ta")
def test_atx_heading_rule_equals_markdown_it(line: str) -> None:
    tokens = markdown_parser().parse(line)
    expected = next(
        (
            (int(tok.tag[1]), tokens[i + 1].content.strip())
            for i, tok in enumerate(tokens)
            if tok.type == "heading_open" and tok.level == 0
        ),
        None,
    )
    if line.startswith(" ") or line.startswith("\t"):
        return  # indented lines never take the fast path (they are "risky")
    assert _atx_heading(line) == expected


# -------------------------------------------------------------------------- fuzzing

ADVERSARIAL_PIECES = [
    "<!-- wikimem:", "<!-- wikimem: owner=a | ts=2026-01-01 -->", "-->", "<!--", "[[", "]]",
    "[[a#b|c]]", "![[e]]", "#", "#tag", "#1", "`", "```", "~~~", "\n", " ", "\t", "## ",
    "## 08:15", "# T", "---", "...", "> ", "- ", "    ", "\r", "\r\n", "\ufeff", "\0", "|",
    "===", "<div>", "</div>", "&", "{", "}", "[", "]", "a: &x [1]", "*x", "title: [a]",
]  # fmt: skip
ADVERSARIAL = st.lists(st.sampled_from(ADVERSARIAL_PIECES), max_size=60).map("".join)
PATHS = st.sampled_from(["diary/2026-01-01.md", "wiki/x.md", "diary/bad.md", "n.md"])


@settings(max_examples=200, deadline=None)
@given(PATHS, st.one_of(ADVERSARIAL, st.text(max_size=200)))
def test_adversarial_notes_parse_without_raising(path: str, text: str) -> None:
    parsed = parse_note(path, text)
    assert not any(w.startswith("could not parse") for w in parsed.warnings), parsed.warnings
    ids = [e.id for e in parsed.entries]
    assert len(ids) == len(set(ids))
    lines = text.replace("\r\n", "\n").replace("\r", "\n").count("\n") + 1
    assert all(1 <= e.line <= lines for e in parsed.entries)
    # Every well-formed metadata comment was taken out. (Where a link sat inside a malformed
    # one, "<!-- wikimem:[[a#b|c]]…", rendering the link to its words can make the rest read
    # well-formed in the indexed text; it is still the note's text, not its metadata.)
    for e in parsed.entries if "[[" not in text else ():
        assert strip_meta(e.text, lambda body: parse_meta(body) is not None) == e.text
