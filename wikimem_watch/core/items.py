"""Which lines of a note are which item, as the index reads them: pure lookup, no I/O.

A write names an item (ADR-0016) and this module finds its lines: the note's level-2
sections (``sections``, through the index's own heading reader, so a ``## `` in a code fence
is never one) and, given the note's path, the prose before the first section, which the
index reads as the item named after the note's title (``title_item``, DESIGN §2). A name
finds the sections written as it is (whitespace collapsed, NFC); else those that differ
from it in case only, when they all read one way. Sections that read several ways are
several items, and a write naming them is refused as ambiguous (``items_named``).
``core/edit`` splices the lines found here; ``core/names`` is another table (the names a
whole note answers to, which links resolve against).
"""

from __future__ import annotations

import re
import unicodedata
from typing import NamedTuple

from ..errors import BadRequest
from .frontmatter import front_matter_lines
from .headings import headings
from .parse import parse_note

LINE_BREAK = re.compile(r"\r\n|\r|\n")


def split_lines(text: str) -> list[str]:
    """Lines with their own endings (``\\r\\n``, ``\\r`` or ``\\n``; the last may have none),
    numbered as the parser numbers them."""
    out: list[str] = []
    pos = 0
    for m in LINE_BREAK.finditer(text):
        out.append(text[pos : m.end()])
        pos = m.end()
    if pos < len(text):
        out.append(text[pos:])
    return out


def sections(text: str) -> list[tuple[int, str]]:
    """The level-2 headings of a note as (0-based line, heading text), as the index reads them."""
    norm = LINE_BREAK.sub("\n", text).lstrip("\ufeff")
    fm = front_matter_lines(norm)
    body = "\n".join(norm.split("\n")[fm:]) if fm else norm
    return [(n + fm, h) for n, lvl, h in headings(body) if lvl == 2]


def name_key(heading: str) -> str:
    """A heading as an item name: whitespace collapsed (as wikimem reads it) and NFC, so a
    name typed as "é" finds the heading an editor saved as "e" + U+0301."""
    return unicodedata.normalize("NFC", " ".join(heading.split()))


def folded_key(heading: str) -> str:
    """A heading as an item name, case aside: an agent's "milk" is the person's ``## Milk``,
    as a ``[[file:milk]]`` link finds it (``links.heading_key``); casefolded, so "STRASSE"
    finds "Straße"."""
    return unicodedata.normalize("NFC", name_key(heading).casefold())


class Item(NamedTuple):
    """An item of a note: its 0-based line span and name; ``titled`` for the prose before
    the first ``##``, named after the note's title (no heading line of its own)."""

    start: int
    end: int
    name: str
    titled: bool = False


def items_of(text: str, path: str | None = None) -> list[Item]:
    """Every item of the note in file order: its ``##`` sections and, given the note's
    ``path``, the prose before the first of them (after front matter and the ``# title``),
    which the index reads as an item named after the note's title (DESIGN §2)."""
    heads = sections(text)
    total = len(split_lines(text))
    ends = [n for n, _ in heads[1:]] + [total]
    out = [Item(n, end, h) for (n, h), end in zip(heads, ends, strict=False)]
    titled = title_item(text, path, heads[0][0] if heads else total)
    return [titled, *out] if titled else out


def title_item(text: str, path: str | None, end: int) -> Item | None:
    """The prose before line ``end`` (the first section) as the index reads it: the item
    ``parse`` names after the note's title, from its first line of text; None when there is
    none (nothing but front matter, a title, blank lines or comments)."""
    if path is None or end == 0:
        return None
    head = "".join(split_lines(text)[:end])  # what comes before a heading reads alone the same
    entry = next((e for e in parse_note(path, head).entries if e.id == path), None)
    if entry is None or not entry.text or entry.line > end:
        return None  # none, or a stub: a title with nothing under it has no text to replace
    return Item(entry.line - 1, end, entry.heading, titled=True)


def items_named(
    text: str, name: str, path: str | None = None, *, strict: bool = True
) -> list[Item]:
    """The sections item ``name`` names: those written as it is (NFC, whitespace collapsed);
    else those that differ from it in case only, when they all read one way. Sections that
    read several ways (``## Milk`` and ``## MILK`` for "milk") are two items, never merged
    by a write: BadRequest names them (``strict=False``: all of them)."""
    want = folded_key(name)
    found = [item for item in items_of(text, path) if folded_key(item.name) == want]
    exact = [item for item in found if name_key(item.name) == name_key(name)]
    if exact or not found:
        return exact
    spellings = list(dict.fromkeys(name_key(item.name) for item in found))
    if len(spellings) > 1 and strict:
        listed = ", ".join(f"{item.name!r} (line {item.start + 1})" for item in found)
        raise BadRequest(
            f"item {name!r} is ambiguous: the note has {listed}, which differ in case only; "
            "name one of them as it is written"
        )
    return found


def find_item(text: str, name: str, path: str | None = None) -> tuple[int, int] | None:
    """The (start, end) 0-based line span of the last section of item ``name`` (whitespace
    in the heading collapsed, as wikimem reads it; canonically equivalent characters and,
    when no heading is written as the name is, case alike: ``items_named``; the last of
    repeated names wins), or None. Given the note's ``path``, the prose before its first
    section is the item named after its title."""
    found = items_named(text, name, path)
    return (found[-1].start, found[-1].end) if found else None


def item_heading(text: str, name: str, path: str | None = None) -> str | None:
    """The heading of item ``name`` as the note writes it (``Milk`` for "milk"), or None."""
    found = items_named(text, name, path)
    return name_key(found[-1].name) if found else None


def item_state(text: str | None, name: str, path: str | None = None) -> str | None:
    """The sections of item ``name`` as text with ``\\n`` line breaks, or None when absent
    (several that differ in case only: all of them, one after the other)."""
    if text is None:
        return None
    found = items_named(text, name, path, strict=False)
    if not found:
        return None
    if len({name_key(item.name) for item in found}) == 1:
        found = found[-1:]  # repeated as written: the last one is the item
    lines = split_lines(text)
    return "".join(LINE_BREAK.sub("\n", "".join(lines[a:b])) for a, b, *_ in found)
