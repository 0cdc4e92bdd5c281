"""Byte-preserving edits of a note's text: pure functions, text in → text out, no I/O.

The daemon writes three things into a user's files (ADR-0016): a diary entry (``## HH:MM``
section) into ``diary/YYYY-MM-DD.md``, and a wiki item (``## name`` section) inserted,
replaced or removed in ``wiki/<file>.md`` (or the prose before the first section, which the
index reads as the item named after the note's title). Everything it does not own — front
matter, a preamble that is not the item written, other sections, comments, blank lines,
trailing whitespace, CRLF line endings, a missing final newline — comes out exactly as it
went in: an edit is a splice of whole lines, located by ``items`` (which finds an item by
name with the same heading reader as the index, so a ``## `` in a code fence is never
mistaken for a section). The spliced text uses the file's own line endings. The layout of
what we write follows the wikimem library: heading, blank line, text, blank line, the
``<!-- wikimem: … -->`` comment.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..errors import BadRequest, require_text
from .frontmatter import front_matter_lines
from .headings import headings
from .items import (
    LINE_BREAK,
    Item,
    find_item,
    folded_key,
    item_heading,
    items_named,
    items_of,
    name_key,
    sections,
    split_lines,
)
from .vault import MAX_NOTE_BYTES

_TIME = re.compile(r"^([01]?\d|2[0-3]):([0-5]\d)$")
_FILE = re.compile(r"[a-z0-9_][a-z0-9_-]{0,99}")
_RESERVED = ("[[", "]]", ":", "|", "#")
_CONTROL = re.compile(r"[\x00-\x1f\x7f\x85\u2028\u2029]")  # no line may end inside a name
_META_OPEN = re.compile(r"<!--\s*wikimem:")  # where the index and wikimem see metadata
_ATX = re.compile(r" {0,3}#")
_SETEXT = re.compile(r"^ {0,3}(?:=+|-+)[ \t]*(?:\r\n|\r|\n)?$")
MAX_NAME_CHARS = 200
MAX_BODY_CHARS = 200_000  # an entry or an item, not a document: a daemon takes 1 MiB a request


@dataclass(frozen=True, slots=True)
class Edit:
    """An edited text: the whole new ``text``, the 1-based ``line`` of the written section's
    heading, and ``appended`` — the suffix added when the edit only adds at the end (the
    old text is then ``text[: len(text) - len(appended)]``), else ``None``."""

    text: str
    line: int
    appended: str | None = None


# ----------------------------------------------------------------------- names


def check_file(file: object) -> str:
    """A wiki file name: a lowercase ASCII slug (it is also the file name and link prefix)."""
    if not isinstance(file, str) or not _FILE.fullmatch(file):
        raise BadRequest(
            f'"file" must be a lowercase ASCII slug like "daily_life" '
            f"([a-z0-9_][a-z0-9_-]*, at most 100 characters; the file is wiki/<file>.md), "
            f"got {file!r}"
        )
    return file


def check_name(name: object) -> str:
    """An item name: any language, whitespace collapsed, none of ``[[ ]] : | #``."""
    if not isinstance(name, str):
        raise BadRequest(f'"name" must be a string, got {name!r}')
    if _CONTROL.search(require_text(name, "name").strip()):
        raise BadRequest(f'"name" {name!r} contains a control character or line break')
    cleaned = " ".join(name.split())
    if not cleaned:
        raise BadRequest('"name" is empty: an item needs a name (any language)')
    if len(cleaned) > MAX_NAME_CHARS:
        raise BadRequest(f'"name" is {len(cleaned)} characters; at most {MAX_NAME_CHARS}')
    bad = [tok for tok in _RESERVED if tok in cleaned]
    if bad:
        raise BadRequest(
            f'"name" {cleaned!r} contains {" ".join(bad)}: item names may not contain '
            "[[ ]] : | # (they must stay safe in headings and [[file:name]] links)"
        )
    return cleaned


def check_time(value: str) -> str:
    """``H:MM`` / ``HH:MM`` (00:00–23:59) → ``HH:MM``."""
    m = _TIME.match(value)
    if not m:
        raise BadRequest(f'"time" must be HH:MM between 00:00 and 23:59, got {value!r}')
    return f"{int(m.group(1)):02d}:{m.group(2)}"


def check_body(text: object) -> str:
    """The text of an entry or item: stripped, non-empty, and unable to end its section early
    or to swallow the next one (no level-1/2 heading, no unclosed fence or HTML block, no
    metadata comment of its own, no NUL)."""
    if not isinstance(text, str):
        raise BadRequest(f'"text" must be a string, got {text!r}')
    body = "\n".join(LINE_BREAK.split(require_text(text, "text").strip()))
    if not body.strip():
        raise BadRequest('"text" is empty: there is nothing to write')
    if len(body) > MAX_BODY_CHARS:  # the same through a daemon, in-process, or from MCP
        raise BadRequest(
            f'"text" is {len(body)} characters; an entry holds at most {MAX_BODY_CHARS}'
        )
    if "\x00" in body:
        raise BadRequest('"text" contains a NUL character; notes are text')
    if _META_OPEN.search(body):  # as both readers find one; "<!-- x --> wikimem:" is text
        raise BadRequest('"text" contains a <!-- wikimem: … --> comment; pass owner/source/ts')
    probe = headings(body + "\n\n## probe")
    if probe[-1:] != [(body.count("\n") + 2, 2, "probe")]:
        raise BadRequest(
            '"text" would swallow the next section (an unclosed ``` fence, HTML block or '
            "comment); close it"
        )
    top = [(n, lvl) for n, lvl, _ in probe[:-1] if lvl <= 2]
    if top:
        raise BadRequest(
            f'"text" line {top[0][0] + 1} is a level-{top[0][1]} heading, which would start a '
            "new entry; use ### or deeper inside an entry"
        )
    # The wikimem library reads a note line by line (``str.splitlines``, which also breaks at
    # U+2028 and form feeds), code fences or not: a line it would take for a heading is refused.
    for n, line in enumerate(body.splitlines()):
        if re.match(r"##\s", line):
            raise BadRequest(
                f'"text" line {n + 1} starts with "##", which the wikimem library reads as a '
                "new section even inside a code block; indent it or use ###"
            )
    return body


def render_meta(owner: str | None, source: str | None, ts: str | None) -> str:
    """``<!-- wikimem: owner=… | source=… | ts=… -->`` (wikimem's field order and escaping:
    ``|`` becomes ``/``; line breaks and ``-->`` cannot end the comment early)."""
    fields = []
    for key, value in (("owner", owner), ("source", source), ("ts", ts)):
        if value is None:
            continue
        if _CONTROL.search(require_text(value, key).replace("\n", " ").replace("\t", " ")):
            raise BadRequest(f'"{key}" {value!r} contains a control character')
        clean = " ".join(value.replace("|", "/").split())
        while "-->" in clean or "<!--" in clean:  # "-->>" would be "-->" after one pass
            clean = clean.replace("-->", "--").replace("<!--", "<!-")
        if clean:
            fields.append(f"{key}={clean}")
    return f"<!-- wikimem: {' | '.join(fields)} -->" if fields else ""


# ------------------------------------------------------------------------ blocks


def newline_of(text: str) -> str:
    """The file's line-ending style: CRLF when most of its line breaks are CRLF; CR when it
    has no other."""
    crlf = text.count("\r\n")
    if "\n" not in text and "\r" in text:
        return "\r"
    return "\r\n" if crlf and crlf >= text.count("\n") - crlf else "\n"


def _block(heading: str, body: str, meta: str, nl: str) -> str:
    lines = [f"## {heading}", "", *body.split("\n")]
    if meta:
        lines += ["", meta]
    return nl.join(lines) + nl


def _append(old: str, block: str, nl: str) -> Edit:
    """``block`` added at the end, after a blank line (a final newline is supplied first)."""
    if not old:
        sep = ""
    elif old.endswith("\n") or (old.endswith("\r") and nl != "\n"):
        sep = nl
    else:  # no final break, or a lone CR that our "\n" would join into one CRLF break
        sep = nl + nl
    appended = sep + block
    return Edit(old + appended, len(split_lines(old + sep)) + 1 if old else 1, appended)


# ------------------------------------------------------------------------ edits


def new_file(title: str, heading: str, body: str, meta: str) -> Edit:
    """A new note: ``# title``, a blank line, and one section."""
    block = _block(heading, body, meta, "\n")
    head = f"# {title}\n\n"
    return Edit(head + block, 3, head + block)


def insert_diary_entry(old: str, time: str, body: str, meta: str) -> Edit:
    """Add a ``## time`` entry in chronological order: before the first ``## HH:MM`` section
    whose time is later and that follows every one that is not (equal times keep their
    order: the new one goes after them), else at the end. Sections whose heading is not a
    time stay where they are, and so do entries a person wrote out of order: in 14:00,
    08:00, 20:00 a new 09:30 goes after 08:00 (not at the top), and a new 10:00 in 08:00,
    20:00, 09:00 is appended. The entry has an earlier one before it and a later one after
    it wherever it can, as near the end (where a day grows, by one append) as that allows."""
    bom, text = _bom(old)
    nl = newline_of(text)
    block = _block(time, body, meta, nl)
    lines = split_lines(text)
    at = None  # the first later entry since the last one that is not later
    for n, heading in sections(text):
        m = _TIME.match(heading)
        if m:
            later = f"{int(m.group(1)):02d}:{m.group(2)}" > time
            at = (n if at is None else at) if later else None
    if at is not None and (at == 0 or lines[at - 1].endswith(("\n", "\r"))):
        made = Edit("".join(lines[:at]) + block + nl + "".join(lines[at:]), at + 1)
    else:  # nothing later after the last earlier entry: the end of the day
        made = _append(text, block, nl)
    return _read_back(old, Edit(bom + made.text, made.line, made.appended), time, 1)


def _bom(text: str) -> tuple[str, str]:
    """(the byte-order mark the text starts with, or "", the rest): edits splice the rest,
    so a section on the first line is found where the index finds it, and the mark stays."""
    return ("\ufeff", text[1:]) if text.startswith("\ufeff") else ("", text)


def _read_back(old: str, made: Edit, heading: str, added: int, path: str | None = None) -> Edit:
    """``made``, once the index's own reader finds the written section where the edit put it
    and every other section still there; else BadRequest and nothing is written (a note
    that ends inside an open code block, HTML comment or front matter would swallow it)."""
    if len(made.text.encode("utf-8")) > MAX_NOTE_BYTES:
        raise BadRequest(
            f"the note would be over {MAX_NOTE_BYTES // (1024 * 1024)} MiB, which the index "
            "skips; nothing written"
        )
    after = items_of(made.text.lstrip("\ufeff"), path)
    ours = any(
        i.start == made.line - 1 and folded_key(i.name) == folded_key(heading) for i in after
    )
    if not ours or len(after) != len(items_of(old.lstrip("\ufeff"), path)) + added:
        raise BadRequest(
            f"the note would not read the {heading!r} section back as its own (it ends inside "
            "an open code block, HTML comment or front matter?): nothing written; close it first"
        )
    return made


def _whole(text: str, item: Item) -> Item:
    """``item``, when its lines can be replaced or removed as a whole: BadRequest when they
    hold the note's ``# title`` (text above the title is prose of the same item)."""
    norm = normalize(text).lstrip("\ufeff")
    fm = front_matter_lines(norm)
    body = "\n".join(norm.split("\n")[fm:]) if fm else norm
    title = next((n + fm for n, lvl, _ in headings(body) if lvl <= 2), None)
    if item.titled and title is not None and item.start < title < item.end:
        raise BadRequest(
            f"item {item.name!r} is the note's prose before its first section, and the note's "
            f"title (line {title + 1}) is inside it: nothing written; move the text above the "
            "title below it, or name another item"
        )
    return item


def upsert_item(
    old: str, name: str, body: str, meta: str, path: str | None = None
) -> tuple[Edit, bool]:
    """Replace the body of item ``name`` (its heading line, or all the lines of a setext
    heading, kept byte for byte), or append a new ``## name`` section; returns (edit,
    created). Given the note's ``path``, an item named after its title is the prose before
    the first section, and that prose is what is replaced (title and front matter kept)."""
    bom, text = _bom(old)
    nl = newline_of(text)
    found = items_named(text, name, path)
    if not found:
        made = _append(text, _block(name, body, meta, nl), nl)
        made = Edit(bom + made.text, made.line, made.appended)
        return _read_back(old, made, name, 1, path), True
    start, end, written, titled = _whole(text, found[-1])
    lines = split_lines(text)
    kept = 0 if titled else 1  # the heading line; a setext heading's lines and underline too
    if not titled and "#" not in lines[start][:4]:  # setext: its text may run over lines
        under = next((i for i in range(start + 1, end) if _SETEXT.match(lines[i])), None)
        kept = 1 if under is None else under - start + 1
    heading = "".join(lines[start : start + kept])
    if kept and not heading.endswith(("\n", "\r")):
        heading += nl
    # The part after the heading; the title's item starts at its text (the blank lines above
    # it are the person's, and stay).
    section = _block(name, body, meta, nl).split(nl, 2 if titled else 1)[-1]
    if end < len(lines):
        section += nl  # a blank line before the next section
    elif not lines[-1].endswith(("\n", "\r")):
        section = section[: -len(nl)]  # the file had no final newline: it still has none
    made = Edit(bom + "".join(lines[:start]) + heading + section + "".join(lines[end:]), start + 1)
    return _read_back(old, made, written, 0, path), False


def delete_item(old: str, name: str, path: str | None = None) -> str | None:
    """The text without item ``name``'s sections (heading to the next one; every section of
    that name, as the wikimem library removes them), or None when there is no such item.

    The last section of a file takes the blank line that set it apart with it (the one
    ``upsert_item`` put there when it added the item): adding an item and deleting it gives
    the file back byte for byte, and no file is left ending in a blank line."""
    bom, text = _bom(old)
    written = item_heading(text, name, path)
    if written is None:
        return None
    nl = newline_of(text)
    span = find_item(text, name, path)
    for item in items_named(text, name, path):
        _whole(text, item)
    while span is not None:
        lines = split_lines(text)
        head, tail = "".join(lines[: span[0]]), "".join(lines[span[1] :])
        if not tail and head.endswith(nl + nl):
            head = head[: -len(nl)]
        elif tail and not _ATX.match(tail) and _is_text(lines[span[0] - 1] if span[0] else ""):
            # A setext heading next (text, then ---) would take the line of text above as
            # its own first line: a blank line keeps that line in its section.
            head += nl
        text = head + tail
        # Sections written as the deleted one: one in another case is another item.
        again = [(i.start, i.end) for i in items_of(text, path) if name_key(i.name) == written]
        span = again[-1] if again else None
    return bom + text


def _is_text(line: str) -> bool:
    """A line a paragraph could continue from: not blank, not an ATX heading."""
    return bool(line.strip()) and not _ATX.match(line)


def normalize(text: str) -> str:
    """``text`` with ``\\n`` line breaks only."""
    return LINE_BREAK.sub("\n", text) if "\r" in text else text


def count_time(text: str, time: str) -> int:
    """How many ``## time`` sections ``text`` has (``9:00`` is ``09:00``)."""
    found = (_TIME.match(h.strip()) for _, h in sections(text))
    return sum(1 for m in found if m and f"{int(m.group(1)):02d}:{m.group(2)}" == time)


def count_block(text: str, block: str) -> int:
    """How many times ``block`` (``\\n`` line breaks) occurs in ``text`` (any line breaks)."""
    return normalize(text).count(block)


def diary_block(time: str, body: str, meta: str) -> str:
    """The entry as written, with ``\\n`` line breaks (what ``count_block`` looks for)."""
    return _block(time, body, meta, "\n")
