"""What a section's text says inline: its ``[[links]]``, Markdown links to notes and
``#tags`` (read from prose only, never from code), and the text as it is indexed (a link
reads as its alias or target words). Pure and linear in the input (ADR-0011).
"""

from __future__ import annotations

import posixpath
import re
import unicodedata
from functools import cache

from .frontmatter import front_strings
from .models import Link

_LINK = re.compile(r"(?P<embed>!?)\[\[(?P<inner>[^\[\]\n]+)\]\]")
_SIZE = re.compile(r"\d+(?:x\d+)?")  # ![[x.png|200]], ![[x.png|200x100]]: a size, not words
# An inline #tag: not in a word, a URL ("?q=#x", "/#x"), an entity (&#39;), a link to a
# heading ("[[#Heading]]", "[text](#heading)") or escaped ("\#42", how Obsidian users keep a
# "#" from making a tag). ``#(?<!X#)`` is ``(?<!X)#``, but the matcher jumps from "#" to "#"
# instead of trying the look-behind at every character (~6× faster).
_TAG = re.compile(r"#(?<![\w#&/=(\[\\]#)(?P<tag>[^\W\d_][\w/-]*|\d+[^\W\d][\w/-]*)")
_TAG_REST = re.compile(r"[\w/-]*")  # what a tag goes on with after a combining mark
# Code, where no #tag is read: fenced blocks (``` or ~~~, three or more, closed by a fence as
# long, or open to the end) and inline spans of one or two backticks. Each alternative stops
# at the next fence or backtick run, so the scan stays linear (ADR-0011). A backtick fence's
# line holds no other backtick (CommonMark): "```npm i``` runs it" is inline code in prose,
# not a fence left open to the end of the section.
_FENCE = re.compile(r"^ {0,3}(`{3,}(?=[^`\n]*$)|~{3,})", re.M)
# Where that scan cannot place a code block: a quoted line, a list item that opens with a fence
# or a quote ("- ```", "1. > x"), an indented fence (a list item's: it ends with the item), an
# indented line that may be indented code (the first line, or one after a blank line or after
# a line that is no paragraph it could continue: a heading, a fence, a rule, an underline,
# HTML). Text holding one is read by markdown-it, which knows the containers: a fence in a
# quote or a list item is code there too (its tags and links were counted), and it ends where
# its container does. A nested list ("- a" then "\t- b") is not among them: it keeps the scan.
# Matched at the start and searched after each "\n" (as ``headings`` does): "^" with re.M is
# tried at every character, a literal "\n" skips from line to line.
_CONTAINED_LINE = (
    r"(?: {0,3}>|[ \t]*(?:(?:[-+*]|\d{1,9}[.)])[ \t]+)+(?:>|`{3}|~{3})|[ \t]+(?:`{3}|~{3})"
    r"|(?:[ \t]*| {0,3}(?:[#<]|`{3}|~{3})[^\n]*| {0,3}(?:(?:[-*_][ \t]*){3,}|=+[ \t]*|-+[ \t]*))"
    r"\n(?: {4}|\t))"
)
_CONTAINED_FIRST = re.compile(_CONTAINED_LINE + r"| {4}|\t")  # indented first: code there too
_CONTAINED_NEXT = re.compile("\n" + _CONTAINED_LINE)
# A line that may open an HTML block (each of CommonMark's seven kinds starts with "<" after at
# most three spaces; a comment closed on its own line hides nothing). Inside one, "```" is HTML
# and no fence: the scan would blank from it to the next fence or the end, and lose the prose
# after the block. Text holding one and a fence is read by markdown-it too.
_HTML_LINE = r" {0,3}<(?!!--.*-->[ \t]*(?:\n|$))"
_HTML_FIRST = re.compile(_HTML_LINE)
_HTML_NEXT = re.compile("\n" + _HTML_LINE)
_INLINE_CODE = re.compile(r"``(?:[^`\n]|`(?!`))*``|`[^`\n]*`")
# A Markdown link to a note, "[text](people/Ann.md#Work)" (Obsidian writes these when wikilinks
# are off): a relative path ending in .md, percent-encoded or in <angle brackets>.
# Bounded and without "[" in the text or "(" in the path: each "[" starts at most one short
# try, so a line of "[](" repeated parses in linear time (ADR-0011).
_MD_LINK = re.compile(
    r"(?P<embed>!?)\[(?P<text>[^\[\]\n]{0,1000})\]"
    r"\((?:<(?P<a>[^<>\n]{1,1000})>|(?P<p>[^()\s]{1,1000}))\)"
)


def parse_link(inner: str, embed: bool) -> Link | None:
    """The inside of ``[[…]]``: ``file:name``, ``Note``, ``Note#Heading``, ``Note#Head|alias``
    (``Note\\|alias`` too: Obsidian's escaped pipe inside a table). An embed's ``|200`` or
    ``|200x100`` is its size in pixels, not an alias."""
    target, _, alias = inner.partition("|")
    target = target.strip().removesuffix("\\").rstrip()
    if not target:
        return None
    if embed and _SIZE.fullmatch(alias.strip()):
        alias = ""
    if "#" not in target and ":" in target:
        file, _, name = target.partition(":")
        if file.strip() and name.strip():
            return Link(file.strip(), name.strip(), alias.strip() or None, embed, "wikimem")
    note, _, heading = target.partition("#")
    return Link(note.strip(), heading.strip() or None, alias.strip() or None, embed, "obsidian")


def _own_note(path: str, link: Link) -> Link:
    """``[[#Heading]]`` and ``[[#^block]]`` name no note: they lead into the note that holds
    them (Obsidian's link to a section of the same note), so its path is their target."""
    if link.target or not link.heading:
        return link
    return Link(path, link.heading, link.alias, link.embed, link.style)


def _link_text(m: re.Match[str]) -> str:
    """How a link reads in indexed text: its alias, else its target words."""
    link = parse_link(m.group("inner"), bool(m.group("embed")))
    if link is None:
        return m.group()
    if link.alias:
        return link.alias
    return " ".join(x for x in (link.target, link.heading) if x and x != "file")


def read_inline(
    path: str, visible: str, note_tags: tuple[str, ...], indent: str = ""
) -> tuple[str, tuple[Link, ...], tuple[str, ...]]:
    """(indexed text, links, tags) of a section's ``visible`` text; ``note_tags`` first.
    ``indent``: the spaces or tabs its first line was indented by (``visible`` is stripped),
    so a section that opens with indented code reads it as code."""
    # Each pattern below needs a character the text may well not hold: test for it first.
    links: tuple[Link, ...] = ()
    indexed = visible
    # Links and tags are read from prose only: `[[x]]` in code is an example, not a link.
    prose = visible
    if "[[" in visible or "#" in visible or "](" in visible:
        written = indent + visible if indent else visible
        if _contained(written):
            prose = _outside_code_blocks(written)
        elif "`" in visible or "~~~" in visible:
            prose = _without_code(visible)
    if "[[" in prose:
        links = tuple(
            _own_note(path, link)
            for m in _LINK.finditer(prose)
            if (link := parse_link(m.group("inner"), bool(m.group("embed")))) is not None
        )
    if "](" in prose:
        links += _markdown_links(path, prose)
    if "[[" in visible:
        indexed = _LINK.sub(_link_text, visible)
    tags = note_tags
    if "#" in visible:
        inline_tags = _inline_tags(prose)
        tags = tuple(dict.fromkeys(note_tags + inline_tags))
    return indexed, links, tags


def _inline_tags(prose: str) -> tuple[str, ...]:
    """The ``#tags`` of ``prose``, each once. A combining mark (``\\w`` holds none) does not
    end a tag: "#हिन्दी" (vowel signs) and a "#café" typed as "e" + U+0301 are whole tags,
    not "ह" and "cafe"."""
    tags: list[str] = []
    for m in _TAG.finditer(prose):
        end = m.end()
        while end < len(prose) and unicodedata.category(prose[end])[0] == "M":
            rest = _TAG_REST.match(prose, end + 1)
            end = rest.end() if rest else end + 1
        tags.append(prose[m.start("tag") : end])
    return tuple(dict.fromkeys(tags))


def heading_inline(path: str, heading: str) -> tuple[tuple[Link, ...], tuple[str, ...]]:
    """(links, tags) of a heading: ``## Meeting with [[Ann]] #work`` links and tags its
    section as its text would (Obsidian counts both; "C# notes" and "#42" are no tags)."""
    if "#" not in heading and "[[" not in heading and "](" not in heading:
        return (), ()
    _, links, tags = read_inline(path, heading, ())
    return links, tags


def _without_code(text: str) -> str:
    """``text`` with its code blocks and inline code spans blanked out."""
    out: list[str] = []
    pos = 0
    while (m := _FENCE.search(text, pos)) is not None:
        out.append(_INLINE_CODE.sub(" ", text[pos : m.start()]))
        fence = m.group(1)
        close = _closing_fence(fence[0], len(fence)).search(text, m.end())
        pos = close.end() if close else len(text)
        out.append(" ")
    out.append(_INLINE_CODE.sub(" ", text[pos:]))
    return "".join(out)


def _contained(text: str) -> bool:
    """Whether ``text`` may hold code the fence scan cannot place (``_CONTAINED_LINE``), or a
    fence line that an HTML block makes HTML (``_HTML_LINE``)."""
    if _CONTAINED_FIRST.match(text) is not None or _CONTAINED_NEXT.search(text) is not None:
        return True
    if "```" not in text and "~~~" not in text:
        return False  # no fence: an HTML block changes nothing the scan reads
    return _HTML_FIRST.match(text) is not None or _HTML_NEXT.search(text) is not None


def _outside_code_blocks(text: str) -> str:
    """:func:`_without_code` for text whose code blocks may sit in a quote or a list item, or
    be indented: the lines of each block as markdown-it reads them are blanked."""
    from .headings import markdown_parser  # imported when first needed: a start may need none

    lines = text.split("\n")
    for tok in markdown_parser().parse(text):
        if tok.type in ("fence", "code_block") and tok.map is not None:
            lines[tok.map[0] : tok.map[1]] = [""] * (tok.map[1] - tok.map[0])
    return _INLINE_CODE.sub(" ", "\n".join(lines))


@cache
def _closing_fence(char: str, length: int) -> re.Pattern[str]:
    return re.compile(rf"^ {{0,3}}{re.escape(char)}{{{length},}}[ \t]*$", re.M)


def _markdown_links(path: str, prose: str) -> tuple[Link, ...]:
    """The Markdown links to notes in ``prose``: the target as a vault path, resolved from
    the folder of the note at ``path`` (a URL or a file that is not a note is no link)."""
    from urllib.parse import unquote  # here: a start from the snapshot parses no note

    out: list[Link] = []
    for m in _MD_LINK.finditer(prose):
        raw, _, raw_heading = (m.group("a") or m.group("p")).partition("#")
        target, heading = unquote(raw), unquote(raw_heading)
        if "://" in target or target.startswith("mailto:") or not target.lower().endswith(".md"):
            continue
        if "\\" in target or "\0" in target:
            continue  # a Windows path or a NUL: no note of this vault is named so
        where = posixpath.normpath(posixpath.join(posixpath.dirname(path), target))
        if where.startswith("../") or where == "..":
            continue  # outside the vault: nothing to resolve it to
        alias = m.group("text").strip() or None
        out.append(Link(where, heading.strip() or None, alias, bool(m.group("embed"))))
    return tuple(out)


def front_links(front: dict[str, object]) -> tuple[Link, ...]:
    """The ``[[links]]`` in the front matter's text values (none when it has none)."""
    found = (
        parse_link(m.group("inner"), bool(m.group("embed")))
        for text in front_strings(front)
        if "[[" in text
        for m in _LINK.finditer(text)
    )
    return tuple(link for link in found if link is not None)
