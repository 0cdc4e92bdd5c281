"""Where a link leads (``core/links.py``): which note, which section, and back, as Obsidian
resolves them where the two could differ."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import engine_for, hits, write
from wikimem_watch.core.bm25 import COMPACT_MIN
from wikimem_watch.core.links import LinkMap
from wikimem_watch.core.models import Link
from wikimem_watch.retrieval.context import MAX_LINKED
from wikimem_watch.retrieval.query import run_query
from wikimem_watch.retrieval.request import QueryRequest


def paths(engine: object, link: Link) -> set[str]:
    return {e.path for e in engine.resolve(link)}  # type: ignore[attr-defined]


def test_a_file_name_wins_over_a_title_or_an_alias(tmp_path: Path) -> None:
    engine = engine_for(
        tmp_path,
        {
            "projects/Ideas.md": "## one\n\nx\n",
            "inbox.md": "# Ideas\n\n## later\n\ny\n",  # its title is "Ideas"
            "people/Ann.md": "## Work\n\nengineer\n",
            "Meeting.md": "---\naliases: [Ann]\n---\n## notes\n\nz\n",
            "wiki/people.md": "## Ann\n\nsails\n",
            "Contacts.md": "# People\n\n## phone\n\n123\n",
            "Projects/people.md": "## Ann\n\nanother Ann\n",
        },
    )
    assert paths(engine, Link("Ideas")) == {"projects/Ideas.md"}
    assert paths(engine, Link("Ann", "Work")) == {"people/Ann.md"}
    assert paths(engine, Link("people", "Ann", style="wikimem")) == {"wiki/people.md"}
    assert paths(engine, Link("file", "people", style="wikimem")) == {"wiki/people.md"}
    assert paths(engine, Link("inbox")) == {"inbox.md"}  # its own name still works
    assert paths(engine, Link("./people/Ann")) == paths(engine, Link("/people/Ann"))
    assert paths(engine, Link("/people/Ann")) == {"people/Ann.md"}
    assert [e.path for e, _ in engine.backlinks("projects/Ideas.md")] == []


def test_a_heading_is_matched_as_obsidian_writes_it_into_a_link(tmp_path: Path) -> None:
    day = "# 2026-11-07\n\n## 10:30\n\ncoffee\n\n## 12:00\n\nlunch\n"
    ann = "# Ann\n\n## Work\n\nengineer\n\n### Hobbies\n\nsailing ^sail1\n\n## Q&A: FAQ\n\nask\n"
    engine = engine_for(tmp_path, {"diary/2026-11-07.md": day, "Ann.md": ann})

    def heading(link: Link) -> list[str]:
        return [e.heading for e in engine.resolve(link)]

    assert heading(Link("2026-11-07", "10 30")) == ["10:30"]  # Obsidian drops the ":"
    assert heading(Link("2026-11-07", "10:30")) == ["10:30"]
    assert heading(Link("Ann", "hobbies")) == ["Work"]  # a ### heading: its section
    assert heading(Link("Ann", "^sail1")) == ["Work"]  # a block id
    assert heading(Link("Ann", "Work#Hobbies")) == ["Work"]
    assert heading(Link("Ann", "Q&A FAQ")) == ["Q&A: FAQ"]
    assert heading(Link("Ann", "work  ")) == ["Work"]
    # A heading the note lacks leads to the note, not nowhere; so does a link to an empty one.
    assert heading(Link("Ann", "Typo")) == ["Work", "Q&A: FAQ"]
    write(tmp_path, "empty.md", "")
    write(tmp_path, "src.md", "[[Ann#Typo]] [[empty]] [[Nobody]]\n")
    engine.apply(["empty.md", "src.md"])
    assert [u["target"] for u in engine.unresolved_links()] == ["Nobody"]
    assert [e.path for e, _ in engine.backlinks("Ann.md")] == ["src.md"]
    assert [e.path for e, _ in engine.backlinks("empty.md")] == ["src.md"]


def test_backlinks_follow_edits(tmp_path: Path) -> None:
    engine = engine_for(tmp_path, {"Ann.md": "## Work\n\nx\n", "a.md": "see [[Ann]]\n"})
    assert [e.path for e, _ in engine.backlinks("Ann.md")] == ["a.md"]
    write(tmp_path, "b.md", "also [[Ann#Work]]\n")
    write(tmp_path, "a.md", "no link now\n")
    engine.apply(["a.md", "b.md"])
    assert [e.path for e, _ in engine.backlinks("Ann.md")] == ["b.md"]


def test_backlinks_build_each_linking_entry_once_not_once_per_link(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An entry linking one note n times was built n times, each build making all its links:
    a section with 40 [[people]] among 2000 such took the engine lock for 17 s."""
    engine = engine_for(tmp_path, {"Ann.md": "x\n", "log.md": "## day\n\n" + "[[Ann]] " * 50})
    built: list[int] = []
    entry = engine.store.entry
    monkeypatch.setattr(engine.store, "entry", lambda slot: built.append(slot) or entry(slot))
    found = engine.backlinks("Ann.md")
    assert len(found) == 50 and {e.id for e, _ in found} == {"log.md#day"}
    assert len(built) == 1


def test_a_link_in_code_is_an_example_not_a_link(tmp_path: Path) -> None:
    text = "Write `[[Ann]]` to link.\n\n```\n[[Nobody]]\n```\n\nSee [[Bob]].\n"
    engine = engine_for(tmp_path, {"Ann.md": "x\n", "Bob.md": "y\n", "how.md": text})
    assert engine.backlinks("Ann.md") == []
    assert [e.path for e, _ in engine.backlinks("Bob.md")] == ["how.md"]
    assert engine.unresolved_links() == []


def test_a_hub_note_brings_a_few_linked_entries_the_best_first(tmp_path: Path) -> None:
    notes = {f"n{i:02}.md": f"## n{i}\n\nplain note {i}\n" for i in range(12)}
    notes["n07.md"] = "## n7\n\nthe zebra note\n"
    notes["hub.md"] = "## hub\n\nzebra index: " + " ".join(f"[[n{i:02}]]" for i in range(12))
    engine = engine_for(tmp_path, notes)
    result = run_query(engine, QueryRequest(q="zebra index", k=1))
    (hub,) = hits(result)
    linked = hub["linked"]
    assert isinstance(linked, list) and len(linked) == MAX_LINKED
    assert linked[0]["path"] == "n07.md"  # matches the query: first
    assert [c["path"] for c in linked[1:]] == ["n00.md", "n01.md", "n02.md", "n03.md"]
    assert hub["linked_more"] == 12 - MAX_LINKED


def test_a_whole_note_link_brings_the_section_the_hit_names_when_none_matches(
    tmp_path: Path,
) -> None:
    engine = engine_for(
        tmp_path,
        {
            "wiki/projects.md": "## Billing\n\nrefunds\n\n## Pantry\n\na recipe app\n",
            "diary/2026-11-24.md": (
                "# 2026-11-24\n\n## 14:00\n\nPantry: install docs [[file:projects]]\n"
            ),
        },
    )
    (hit,) = hits(run_query(engine, QueryRequest(q="install docs", k=1)))
    assert [c["heading"] for c in hit["linked"]] == ["Pantry"]  # type: ignore[union-attr]


def test_names_compare_in_nfc_and_a_wikimem_link_prefers_wiki(tmp_path: Path) -> None:
    """A macOS file name is NFD ("Cafe" + U+0301); a link typed either way finds it. A root
    people.md does not take [[people:Ann]] from wiki/people.md."""
    engine = engine_for(
        tmp_path,
        {
            "Cafe\u0301.md": "## menu\n\ncoffee\n",
            "people.md": "## Ann\n\nthe other Ann\n",
            "wiki/people.md": "## Ann\n\nsails\n",
        },
    )
    assert (
        paths(engine, Link("Caf\u00e9")) == paths(engine, Link("Cafe\u0301")) == {"Cafe\u0301.md"}
    )
    assert paths(engine, Link("people", "Ann", style="wikimem")) == {"wiki/people.md"}
    assert paths(engine, Link("file", "people", style="wikimem")) == {"wiki/people.md"}
    assert paths(engine, Link("people", "Ann")) == {"people.md"}  # Obsidian: the shallowest


def test_linked_more_counts_entries_not_links(tmp_path: Path) -> None:
    notes = {f"n{i}.md": f"## n{i}\n\nplain {i}\n" for i in range(6)}
    notes["hub.md"] = "## hub\n\nzebra: " + " ".join(f"[[n{i}]]" for i in range(6)) + " [[n5]]" * 3
    engine = engine_for(tmp_path, notes)
    (hub,) = hits(run_query(engine, QueryRequest(q="zebra", k=1)))
    assert len(hub["linked"]) == MAX_LINKED and hub["linked_more"] == 1  # type: ignore[arg-type]


def test_the_links_method_calls_a_link_to_an_empty_note_resolved(tmp_path: Path) -> None:
    """As ``status.unresolved_links`` does: only a note that is not there is unresolved."""
    from wikimem_watch.config import load_config
    from wikimem_watch.daemon.methods import dispatch
    from wikimem_watch.shells.inprocess import LocalService

    engine = engine_for(tmp_path, {"empty.md": "", "src.md": "[[empty]] [[Nobody]]\n"})
    service = LocalService(load_config(tmp_path), engine)
    links = dispatch(service, "links", {"path": "src.md"})["links"]  # type: ignore[index]
    assert [(lk["target"], lk["unresolved"]) for lk in links] == [
        ("empty", False),
        ("Nobody", True),
    ]


def test_a_link_in_the_front_matter_links_the_note(tmp_path: Path) -> None:
    """Obsidian properties ("up: '[[Projects]]'", a list of links) are links of the note:
    its first item carries them, so backlinks and link context see them."""
    engine = engine_for(
        tmp_path,
        {
            "Projects.md": "## list\n\nall of them\n",
            "Ann.md": "## Work\n\nengineer\n",
            "a.md": '---\nup: "[[Projects]]"\nrelated:\n  - "[[Ann#Work]]"\n  - plain\n---\n'
            "## one\n\nzebra notes\n\n## two\n\nmore\n",
        },
    )
    assert [e.path for e, _ in engine.backlinks("Projects.md")] == ["a.md"]
    assert [e.heading for e, _ in engine.backlinks("Ann.md")] == ["one"]
    (hit,) = hits(run_query(engine, QueryRequest(q="zebra", k=1)))
    assert {c["path"] for c in hit["linked"]} == {"Projects.md", "Ann.md"}  # type: ignore[union-attr]


def test_a_markdown_link_to_a_note_is_a_link_from_the_notes_folder(tmp_path: Path) -> None:
    """ "[Ann](../people/Ann.md#Work)", as Obsidian writes links with wikilinks off: a path
    relative to the linking note; URLs, images and code are not links to notes."""
    engine = engine_for(
        tmp_path,
        {
            "people/Ann.md": "## Work\n\nengineer\n",
            "notes/My Trip.md": "## day one\n\nwest lake\n",
            "notes/a.md": "## x\n\nsee [Ann](../people/Ann.md#Work) and [trip](My%20Trip.md),"
            " [web](https://example.com/b.md), ![pic](pic.png), `[c](code.md)`\n",
        },
    )
    assert [e.path for e, _ in engine.backlinks("people/Ann.md")] == ["notes/a.md"]
    assert [e.path for e, _ in engine.backlinks("notes/My Trip.md")] == ["notes/a.md"]
    assert engine.unresolved_links() == []


def test_markdown_links_as_obsidian_writes_them_from_a_subfolder(tmp_path: Path) -> None:
    """Shortest ("Ann.md"), vault-absolute ("people/Ann.md") and relative ("../people/Ann.md")
    forms all lead to people/Ann.md from notes/; a note of front matter links alone is one."""
    engine = engine_for(
        tmp_path,
        {
            "people/Ann.md": "## Work\n\nengineer\n",
            "notes/a.md": "[s](Ann.md) [v](people/Ann.md#Work) [r](../people/Ann.md)\n",
            "p.md": '---\nup: "[[Ann]]"\n---\n',
        },
    )
    assert engine.unresolved_links() == []
    assert sorted({e.path for e, _ in engine.backlinks("people/Ann.md")}) == ["notes/a.md", "p.md"]


def test_a_line_of_brackets_parses_in_linear_time() -> None:
    """The Markdown-link pattern could backtrack over a whole line from every "[": 60 KB of
    "[](" took 7 s, an 8 MiB note hours. Bounded, a megabyte takes a fraction of a second
    (not timed here: the property is that it finishes, and gives no link)."""
    from wikimem_watch.core.parse import parse_note

    for text in ("[](" * 300_000, "[" * 1_000_000 + "\n]("):
        (entry,) = parse_note("a.md", "## x\n" + text).entries
        assert entry.links == ()


def test_after_an_edit_only_the_edited_notes_links_are_resolved_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Backlinks after an edit cost that edit's links, not the vault's (ADR-0001 addendum)."""
    engine = engine_for(
        tmp_path,
        {
            "A.md": "# A\n\n[[B]] and [[Nobody]]\n",
            "B.md": "## one\n\n[[A]]\n",
            "C.md": "## two\n\n[[A]] [[B]]\n",
        },
    )
    assert [e.path for e, _ in engine.backlinks("B.md")] == ["A.md", "C.md"]
    calls: list[str] = []
    resolve = engine.resolve_note
    monkeypatch.setattr(
        engine, "resolve_note", lambda link: calls.append(link.target) or resolve(link)
    )
    write(tmp_path, "A.md", "# A\n\n[[C]] only now\n")  # the same names: the map is kept
    engine.apply(["A.md"])
    assert [e.path for e, _ in engine.backlinks("B.md")] == ["C.md"]
    assert [e.path for e, _ in engine.backlinks("C.md")] == ["A.md"]
    assert engine.unresolved_links() == []
    assert calls == ["C"]
    write(tmp_path, "Nobody.md", "x\n")  # a new name: every link may lead elsewhere
    write(tmp_path, "B.md", "## one\n\n[[Nobody]]\n")
    engine.apply(["Nobody.md", "B.md"])
    assert [e.path for e, _ in engine.backlinks("Nobody.md")] == ["B.md"]
    assert sorted(calls[1:]) == ["A", "B", "C", "Nobody"]  # built again: each link once


def test_a_long_run_of_edits_builds_the_link_map_anew(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine = engine_for(tmp_path, {"A.md": "[[B]]\n", "B.md": "## b\n\nx\n"})
    assert engine.unresolved_links() == []
    monkeypatch.setattr(LinkMap, "MAX_MARKED", 1)  # more marked than this: built anew
    write(tmp_path, "A.md", "[[B]] [[Nowhere]]\n\n## more\n\n[[B]]\n")
    engine.apply(["A.md"])
    assert [u["target"] for u in engine.unresolved_links()] == ["Nowhere"]
    assert [e.path for e, _ in engine.backlinks("B.md")] == ["A.md", "A.md"]


def test_a_whole_note_link_brings_the_named_section_when_it_sits_in_slot_zero(
    tmp_path: Path,
) -> None:
    """Slots are reused once enough are freed: the section the hit names may be slot 0,
    which is a slot, not "none named" (it brought the note's first section instead)."""
    many = COMPACT_MIN + 8
    engine = engine_for(
        tmp_path,
        {
            "a.md": "".join(f"## old {i}\n\nx\n\n" for i in range(many)),
            "diary/2026-11-24.md": "# 2026-11-24\n\n## 14:00\n\ninstall docs\n",
        },
    )
    (tmp_path / "a.md").unlink()
    engine.apply(["a.md"])  # frees every slot of a.md, slot 0 among them
    write(tmp_path, "wiki/projects.md", "".join(f"## Topic {i:05}\n\nx\n\n" for i in range(many)))
    engine.apply(["wiki/projects.md"])
    reused = engine.slot_entry(0)
    assert reused.path == "wiki/projects.md" and reused.heading != "Topic 00000"  # the premise
    write(
        tmp_path,
        "diary/2026-11-24.md",
        f"# 2026-11-24\n\n## 14:00\n\n{reused.heading}: install docs [[file:projects]]\n",
    )
    engine.apply(["diary/2026-11-24.md"])
    (hit,) = hits(run_query(engine, QueryRequest(q="install docs", k=1)))
    assert [c["heading"] for c in hit["linked"]] == [reused.heading]  # type: ignore[union-attr]


def test_of_two_sections_the_hit_names_alike_the_first_in_the_note_is_brought(
    tmp_path: Path,
) -> None:
    """Headings of one length, both named: the highest slot won, and slots follow editing
    history, so a live index brought another section than a fresh scan of the same files."""
    entry = "# 2026-11-24\n\n## 14:00\n\nPantry and Garden: install docs [[file:projects]]\n"
    engine = engine_for(
        tmp_path, {"wiki/projects.md": "## Garden\n\nx\n", "diary/2026-11-24.md": entry}
    )
    write(tmp_path, "wiki/projects.md", "## Pantry\n\ny\n\n## Garden\n\nx\n")  # above it
    engine.apply(["wiki/projects.md"])
    fresh = engine_for(tmp_path, {})
    for index in (engine, fresh):
        (hit,) = hits(run_query(index, QueryRequest(q="install docs", k=1)))
        assert [c["heading"] for c in hit["linked"]] == ["Pantry"]  # type: ignore[union-attr]


def test_a_link_to_a_heading_of_the_same_note_leads_into_that_note(tmp_path: Path) -> None:
    """``[[#Hobbies]]`` and ``[[#^blk]]`` (Obsidian's links within a note) were links to no
    note: ``status`` listed them as unresolved and they brought no linked section."""
    text = "## Work\n\nsee [[#Hobbies]] and [[#^blk|that]]\n\n## Hobbies\n\nsailing ^blk\n"
    engine = engine_for(tmp_path, {"people/Ann.md": text})
    assert engine.unresolved_links() == []
    (work,) = [e for e in engine.entries_of("people/Ann.md") if e.heading == "Work"]
    assert [[e.heading for e in engine.resolve(link)] for link in work.links] == [
        ["Hobbies"],
        ["Hobbies"],
    ]
    assert "Hobbies" in work.text and "that" in work.text  # read as before: no path words
    assert engine.backlinks("people/Ann.md") == []  # a note's own anchors are no backlinks


def test_a_long_line_of_hashes_under_a_deeper_heading_resolves_in_linear_time(
    tmp_path: Path,
) -> None:
    """Looking for a ### heading backtracked over a whole line from every character: a line
    of " #" of 16 KB took 2 s and one of 600 KB an hour, the engine's lock held, when a link
    named a heading the note lacks. Not timed here: the property is that it finishes."""
    evil = "## a\n\n### b" + " #" * 300_000 + "x\n\n### Tips ##\n\nmore\n"
    engine = engine_for(tmp_path, {"Evil.md": evil})
    assert [e.heading for e in engine.resolve(Link("Evil", "nothing"))] == ["a"]
    assert [e.heading for e in engine.resolve(Link("Evil", "tips"))] == ["a"]
