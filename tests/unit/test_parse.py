from __future__ import annotations

import pytest

from wikimem_watch.core.parse import diary_date, parse_link, parse_meta, parse_note

DAY = """# 2026-11-03

## 08:15

Breakfast with 小周. #food

<!-- wikimem: owner=user:lin | source=conv_1 | ts=2026-11-03T08:15:00+08:00 -->

## 08:15

A second entry in the same minute.

## 晚饭后

Walked by the river.
"""


def test_diary_sections_become_entries_with_date_and_time() -> None:
    entries = parse_note("diary/2026-11-03.md", DAY).entries
    assert [(e.date, e.time, e.line) for e in entries] == [
        ("2026-11-03", "08:15", 3),
        ("2026-11-03", "08:15", 9),
        ("2026-11-03", None, 13),
    ]
    assert all(e.kind == "diary" for e in entries)


def test_two_entries_of_the_same_minute_stay_two_with_distinct_ids() -> None:
    first, second, _ = parse_note("diary/2026-11-03.md", DAY).entries
    assert first.id != second.id
    assert first.hash != second.hash


def test_metadata_comment_is_parsed_and_removed_from_text() -> None:
    entry = parse_note("diary/2026-11-03.md", DAY).entries[0]
    assert (entry.owner, entry.source, entry.ts) == (
        "user:lin",
        "conv_1",
        "2026-11-03T08:15:00+08:00",
    )
    assert "wikimem" not in entry.text
    assert entry.tags == ("food",)


def test_metadata_comment_before_the_text_and_last_one_wins() -> None:
    text = "## a\n<!-- wikimem: owner=x | extra=1 -->\nbody\n<!-- wikimem: owner=y -->\n"
    entry = parse_note("wiki/t.md", text).entries[0]
    assert entry.owner == "y"
    assert dict(entry.meta) == {"owner": "y", "extra": "1"}
    assert entry.text == "body"


def test_malformed_metadata_comment_stays_plain_text() -> None:
    entry = parse_note("wiki/t.md", "## a\nbody\n<!-- wikimem: nonsense here -->\n").entries[0]
    assert entry.owner is None
    assert "nonsense" in entry.text
    assert parse_meta("owner=a | oops") is None


def test_heading_inside_code_fence_is_not_a_section() -> None:
    text = "# N\n\n## real\n\n```md\n## fake\n```\n\n## also real\nx\n"
    assert [e.heading for e in parse_note("notes/n.md", text).entries] == ["real", "also real"]


def test_deeper_headings_stay_inside_their_section() -> None:
    text = "## top\nintro\n### sub\ndetail\n## next\nx\n"
    first = parse_note("wiki/t.md", text).entries[0]
    assert "### sub" in first.text and "detail" in first.text


def test_day_file_without_sections_is_one_entry() -> None:
    entries = parse_note("diary/2026-10-25.md", "# 2026-10-25\n\nJust prose.\n\nMore.\n").entries
    assert len(entries) == 1
    assert (entries[0].date, entries[0].time, entries[0].line) == ("2026-10-25", None, 3)


def test_note_without_sections_is_one_item_named_after_its_title() -> None:
    entries = parse_note("notes/Idea.md", "# Big idea\n\nSome words.\n").entries
    assert [(e.heading, e.kind) for e in entries] == [("Big idea", "wiki")]
    untitled = parse_note("notes/Idea.md", "Some words.\n").entries
    assert untitled[0].heading == "Idea"


def test_a_stub_note_with_only_a_title_is_one_item_named_after_it() -> None:
    (stub,) = parse_note("notes/Shopping.md", "# Shopping list\n").entries
    assert (stub.id, stub.heading, stub.text, stub.line) == (
        "notes/Shopping.md",
        "Shopping list",
        "",
        1,
    )
    (tagged,) = parse_note("notes/S.md", "---\ntags: [todo]\n---\n\n# Later\n").entries
    assert (tagged.heading, tagged.tags, tagged.line) == ("Later", ("todo",), 5)
    (front,) = parse_note("notes/S.md", "---\ntitle: From front matter\n---\n").entries
    assert front.heading == "From front matter"
    # Nothing written at all, or a day file with only its date: nothing to find.
    assert parse_note("notes/Empty.md", "").entries == ()
    assert parse_note("notes/Empty.md", "\n  \n").entries == ()
    assert parse_note("diary/2026-11-03.md", "# 2026-11-03\n").entries == ()


def test_a_front_matter_date_is_the_time_of_items_that_give_none() -> None:
    text = (
        "---\ndate: 2024-01-05\n---\n## a\nA.\n\n## b\nB.\n"
        "<!-- wikimem: ts=2025-03-01T08:00:00+00:00 -->\n"
    )
    a, b = parse_note("notes/n.md", text).entries
    assert (a.ts, b.ts) == ("2024-01-05", "2025-03-01T08:00:00+00:00")  # the item's own wins
    (t,) = parse_note("notes/n.md", "---\ndate: 2024-01-05 10:30:00\n---\nText.\n").entries
    assert t.ts == "2024-01-05T10:30:00"
    (d,) = parse_note("diary/2026-11-03.md", "---\ndate: 2024-01-05\n---\n## 08:00\nX.\n").entries
    assert d.ts is None and d.date == "2026-11-03"  # a day's date is its file name's
    odd = parse_note("notes/n.md", "---\ndate: someday\n---\nText.\n")
    assert odd.entries[0].ts is None and "date='someday'" in odd.warnings[0]


def test_an_impossible_date_in_front_matter_skips_the_front_matter_not_the_note() -> None:
    for value in ["2024-13-45", "2024-02-30 25:00:00"]:
        parsed = parse_note("notes/n.md", f"---\ndate: {value}\ntags: [x]\n---\n## a\nBody.\n")
        assert [(e.heading, e.text) for e in parsed.entries] == [("a", "Body.")]
        assert "front matter is not valid YAML" in parsed.warnings[0]


def test_front_matter_is_metadata_not_text() -> None:
    text = (
        "---\ntags: [books, 2026]\naliases: Books\ntitle: Reading\n---\n"
        "# R\n\nPreamble.\n\n## Dune\nGood.\n"
    )
    pre, dune = parse_note("notes/r.md", text).entries
    assert pre.heading == "Reading" and pre.text == "Preamble."
    assert "tags" not in pre.text and "books" not in dune.text
    assert dune.tags == ("books", "2026") and dune.aliases == ("Books",)
    assert dune.line == 10


def test_aliases_as_a_string_are_names_split_at_commas_not_at_spaces() -> None:
    """``aliases: My Long Alias`` made three aliases ("My", "Long", "Alias"): ``[[My Long
    Alias]]`` was unresolved and ``[[Alias]]`` led here."""
    (entry,) = parse_note("n.md", "---\naliases: My Long Alias\ntags: a b, c\n---\nx\n").entries
    assert entry.aliases == ("My Long Alias",) and entry.tags == ("a", "b", "c")
    (old,) = parse_note("n.md", "---\naliases: First One, Second\n---\nx\n").entries
    assert old.aliases == ("First One", "Second")  # the older comma-separated form
    (listed,) = parse_note("n.md", "---\naliases: [' A, B ', 5]\n---\nx\n").entries
    assert listed.aliases == ("A, B", "5")  # an item of a list is one name


def test_bad_front_matter_is_skipped_with_a_warning() -> None:
    parsed = parse_note("notes/x.md", "---\ntags: [unclosed\n---\n## a\nbody\n")
    assert parsed.entries[0].text == "body"
    assert any("YAML" in w for w in parsed.warnings)


def test_links_of_both_styles_are_found() -> None:
    text = "## a\nsee [[people:小周]], [[Note#Head|alias]] and ![[img.png]] and [[Plain]]\n"
    links = parse_note("wiki/t.md", text).entries[0].links
    assert [(x.target, x.heading, x.alias, x.embed, x.style) for x in links] == [
        ("people", "小周", None, False, "wikimem"),
        ("Note", "Head", "alias", False, "obsidian"),
        ("img.png", None, None, True, "obsidian"),
        ("Plain", None, None, False, "obsidian"),
    ]
    assert parse_link("  ", False) is None


def test_an_embed_size_is_not_an_alias() -> None:
    """``![[cover.png|200]]`` is an image 200 px wide: "200" was its alias and its text."""
    text = "## a\nCover ![[cover.png|200]] ![[map.jpg|640x480]] ![[Note|Shown]] [[Page|42]]\n"
    (entry,) = parse_note("wiki/t.md", text).entries
    assert [(x.target, x.alias) for x in entry.links] == [
        ("cover.png", None),
        ("map.jpg", None),
        ("Note", "Shown"),
        ("Page", "42"),  # a link (not an embed) shows "42"
    ]
    assert entry.text == "Cover cover.png map.jpg Shown 42"


def test_inline_tags_ignore_headings_code_and_numbers() -> None:
    text = "## a\n#running and #猫 but not `#code` or #123 or a#b\n"
    assert parse_note("wiki/t.md", text).entries[0].tags == ("running", "猫")


def test_inline_tag_goes_on_over_combining_marks() -> None:
    # Devanagari vowel signs and an accent typed as e + U+0301 are marks, not word characters.
    text = "## a\n#हिन्दी and #cafe\u0301/menu today\n"
    assert parse_note("wiki/t.md", text).entries[0].tags == ("हिन्दी", "cafe\u0301/menu")


def test_links_and_tags_in_headings_count_as_in_text() -> None:
    """Obsidian links and tags a note from its headings too; they were read from section text
    only, so ``## [[Ann]]`` was no backlink of Ann and ``## Standup #work`` no #work."""
    text = (
        "# Week 12 #weekly [[Plans]]\n\n## [[Ann]]\nx\n\n"
        "## Standup #work `#code` C# #42\ny #more\n\n## 09:05\nz\n"
    )
    ann, standup, plain = parse_note("notes/w.md", text).entries
    assert [link.target for link in ann.links] == ["Ann", "Plans"]  # the title's: on the first
    assert ann.tags == ("weekly",) and ann.heading == "[[Ann]]"
    assert (standup.tags, standup.links) == (("weekly", "work", "more"), ())
    assert (plain.tags, plain.links) == (("weekly",), ())
    (entry,) = parse_note("diary/2026-01-05.md", "## 08:00 #gym\nran\n").entries
    assert entry.tags == ("gym",) and entry.time is None  # not "HH:MM": no time (DESIGN §2)


def test_diary_file_with_invalid_date_is_a_note_with_a_warning() -> None:
    parsed = parse_note("diary/2026-02-30.md", "## 08:00\nx\n")
    assert parsed.entries[0].kind == "wiki"
    assert parsed.warnings
    assert diary_date("diary/2026-02-28.md") == "2026-02-28"
    assert diary_date("notes/2026-02-28.md") is None


def test_crlf_and_bom_are_tolerated() -> None:
    entries = parse_note("wiki/t.md", "\ufeff## a\r\nbody\r\n").entries
    assert (entries[0].heading, entries[0].text) == ("a", "body")


def test_ids_are_stable_across_reparse() -> None:
    a = parse_note("diary/2026-11-03.md", DAY).entries
    b = parse_note("diary/2026-11-03.md", DAY).entries
    assert [e.id for e in a] == [e.id for e in b]


def test_front_matter_anchors_cannot_expand_into_a_huge_tag_list() -> None:
    lines = ["---", "a0: &a0 [x, x, x, x, x, x, x, x, x]"]
    for i in range(1, 8):  # str() of tags would be 9**8 items: seconds and gigabytes
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]")
    lines += ["tags: [*a7, ok]", "title: *a7", "---", "body text"]
    (entry,) = parse_note("n.md", "\n".join(lines)).entries
    assert entry.tags == ("ok",) and entry.title == "n"


def test_a_front_matter_date_that_is_an_anchor_bomb_is_never_turned_into_text() -> None:
    """``date: *a8`` below stands for 9**9 items: its str() took 28 s and 2.2 GB for the
    warning's first 40 characters. Shown small here: a list is named, never printed."""
    lines = ["---", "a0: &a0 [x, x, x]"]
    for i in range(1, 4):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 3) + "]")
    lines += ["date: *a3", "---", "body text"]
    parsed = parse_note("notes/n.md", "\n".join(lines))
    assert [e.text for e in parsed.entries] == ["body text"] and parsed.entries[0].ts is None
    assert parsed.warnings == ("front matter date=a list is not an ISO-8601 date; ignored",)
    odd = parse_note("notes/n.md", "---\ndate: {a: 1}\n---\nText.\n")
    assert odd.warnings == ("front matter date=a dict is not an ISO-8601 date; ignored",)


def test_deeply_nested_front_matter_is_skipped_not_fatal() -> None:
    parsed = parse_note("n.md", "---\na: " + "[" * 3000 + "]" * 3000 + "\n---\nbody text\n")
    assert [e.text for e in parsed.entries] == ["body text"]
    assert any("nests deeper" in w for w in parsed.warnings)


def test_a_closing_sequence_alone_makes_an_empty_heading_as_in_commonmark() -> None:
    (entry,) = parse_note("wiki/x.md", "## ###\nbody\n").entries
    assert entry.heading == "x" and entry.line == 1  # empty heading: the note's title stands in


def test_an_unclosed_metadata_comment_stays_text_and_a_later_one_still_counts() -> None:
    text = "## a\n<!-- wikimem: owner=a -->\nkeep <!-- wikimem: owner=b\nmore\n"
    (entry,) = parse_note("wiki/x.md", text).entries
    assert entry.owner == "a" and "<!-- wikimem: owner=b" in entry.text


def test_entry_ids_stay_unique_when_a_heading_looks_like_a_repeat() -> None:
    for text in ("## A\nx\n\n## A\ny\n\n## A~2\nz\n", "## A~2\nz\n\n## A\nx\n\n## A\ny\n"):
        ids = [e.id for e in parse_note("wiki/p.md", text).entries]
        assert len(ids) == len(set(ids)) == 3, ids


def test_a_setext_underline_is_part_of_its_heading_not_of_the_text() -> None:
    entries = parse_note("wiki/x.md", "Title\n=====\n\nSec A\n-----\nbody\n\n## B\ny\n").entries
    assert [(e.heading, e.line, e.text) for e in entries] == [("Sec A", 4, "body"), ("B", 8, "y")]
    (only,) = parse_note("wiki/x.md", "Title\n=====\nbody\n").entries
    assert (only.heading, only.line, only.text) == ("Title", 3, "body")


def test_a_setext_heading_of_several_lines_is_one_line() -> None:
    """A paragraph right above ``---`` is a heading (CommonMark, and Obsidian's reading view);
    its lines were joined with a newline, which split the hit's one-line header in two."""
    text = "Intro.\n\nFirst line of a paragraph\n  second line\n---\nbody after\n"
    _, sec = parse_note("notes/n.md", text).entries
    assert (sec.heading, sec.id, sec.line, sec.text) == (
        "First line of a paragraph second line",
        "notes/n.md#First line of a paragraph second line",
        3,
        "body after",
    )
    (titled,) = parse_note("notes/n.md", "Two line\ntitle\n===\nbody\n").entries
    assert titled.title == "Two line title"


def test_an_escaped_pipe_in_a_table_link_is_the_alias_separator() -> None:
    link = parse_link("Note\\|alias", embed=False)
    assert link is not None and (link.target, link.alias) == ("Note", "alias")


@pytest.mark.parametrize(
    "body",
    [
        "``#no1`` and #yes",
        "```\n#no2 in an unclosed fence",
        "````\n```\n#no3\n```\n````\n#yes",
        "https://e.com/?q=#no4 [md](#no5) [[#No6 heading]] #yes",
        "issue \\#no7 and \\#no8escaped stay text, #yes",
    ],
)
def test_tags_in_code_links_and_urls_are_not_tags(body: str) -> None:
    (entry,) = parse_note("wiki/x.md", "## s\n" + body).entries
    assert all(not t.startswith("no") for t in entry.tags) and set(entry.tags) <= {"yes"}


def test_a_link_inside_a_malformed_comment_never_makes_metadata() -> None:
    """Rendering ``[[a#b|c]]`` to "c" makes the rest read like a comment; it stays text."""
    text = "<!-- wikimem:[[a#b|c]]===<!-- wikimem: owner=a | ts=2026-01-01 -->"
    (entry,) = parse_note("notes/n.md", text).entries
    assert entry.owner is None and entry.ts is None and entry.meta == ()
    assert "owner=a" in entry.text


def test_a_line_opening_with_triple_backtick_inline_code_does_not_hide_the_rest() -> None:
    """``"```npm i``` runs it"`` is inline code (a fence's line holds no other backtick), not
    a fence open to the end: the section's later links and #tags were dropped."""
    body = "## s\n```npm install``` runs it\n\nsee [[Ann]] #todo\n\n```\n[[No]] #no\n```\n"
    (entry,) = parse_note("wiki/x.md", body).entries
    assert entry.tags == ("todo",)
    assert [link.target for link in entry.links] == ["Ann"]


@pytest.mark.parametrize(
    "body",
    [
        "> ```\n> #no1 [[No]]\n> ```\n> #yes",
        "> quoted\n>\n>     #no2 [[No]]\n",
        "- ```\n  #no3 [[No]]\n  ```\n- #yes",
        "- item\n\n      #no4 [[No]]\n",
        "1. > ```\n   > #no5 [[No]]\n",
        "- item\n    - nested\n      ```\n      #no6 [[No]]\n      ```\n",
        "text\n\n    #no7 [[No]] in indented code\n\n#yes",
        "> ```\n> #no8 left open to the end of the quote\n\n#yes [[Yes]]",
        "\n    #no9 [[No]] opens the section (its indent is stripped from the text)\n\n#yes",
    ],
)
def test_tags_and_links_in_code_in_a_quote_or_a_list_item_are_not_read(body: str) -> None:
    """A fence or indented code inside a blockquote or a list item is code, as markdown-it
    reads it and as a top-level fence is: its #tags and [[links]] were counted."""
    (entry,) = parse_note("wiki/x.md", "## s\n" + body).entries
    assert set(entry.tags) <= {"yes"} and {link.target for link in entry.links} <= {"Yes"}


def test_tags_and_links_in_quotes_and_nested_list_items_are_still_read() -> None:
    """... and after a list item's fence left open, which ends with its item."""
    body = (
        "## s\n> #quoted [[A]]\n- #todo [[B]]\n\t- #sub [[C]]\n\npara\n    #lazy [[D]]\n\n"
        "- item\n  ```\n  #no\n#after [[E]]\n"
    )
    (entry,) = parse_note("wiki/x.md", body).entries
    assert entry.tags == ("quoted", "todo", "sub", "lazy", "after")
    assert [link.target for link in entry.links] == ["A", "B", "C", "D", "E"]


def test_a_fence_line_inside_an_html_block_hides_no_prose_after_the_block() -> None:
    """In ``<div>`` … blank line, a ```` ``` ```` line is HTML, not a fence (CommonMark): the
    fast scan read it as a fence left open and dropped the #tags and [[links]] after the
    block, while the section's headings (read by markdown-it) already knew it was HTML."""
    body = "## Ann\n\n<div>\n```\n</div>\n\nmet #work with [[Bob]]\n\n## Cy\n\nc\n"
    ann, cy = parse_note("wiki/x.md", body).entries
    assert (ann.heading, cy.heading) == ("Ann", "Cy")
    assert ann.tags == ("work",)
    assert [link.target for link in ann.links] == ["Bob"]
    # Fences that an HTML block holds are HTML too: a tag between them is read, as by
    # markdown-it (tags inside HTML blocks count, ADR-0001).
    (entry,) = parse_note("wiki/x.md", "## s\n<div>\n```\n#inside\n```\n</div>\n").entries
    assert entry.tags == ("inside",)
