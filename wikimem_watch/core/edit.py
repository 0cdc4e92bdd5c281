"""Byte-preserving edits of a note's text: pure functions, text in → text out, no I/O.

The daemon writes three things into a user's files (ADR-0016): a diary entry (``## HH:MM``
section) into ``diary/YYYY-MM-DD.md``, and a wiki item (``## name`` section) inserted,
replaced or removed in ``wiki/<file>.md``. Everything it does not own — front matter,
preamble, other sections, comments, blank lines, trailing whitespace, CRLF line endings, a
missing final newline — comes out exactly as it went in: an edit is a splice of whole lines,
located with the same heading reader as the index (``headings.headings``), so a ``## `` in a
code fence is never mistaken for a section. The spliced text uses the file's own line
endings. The layout of what we write follows the wikimem library: heading, blank line,
text, blank line, the ``<!-- wikimem: … -->`` comment.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..errors import BadRequest, require_text
from .headings import headings
from .parse import front_matter_lines

_BREAK = re.compile(r"\r\n|\r|\n")
_TIME = re.compile(r"^([01]?\d|2[0-3]):([0-5]\d)$")
_FILE = re.compile(r"^[a-z0-9_][a-z0-9_-]*$")
_RESERVED = ("[[", "]]", ":", "|", "#")


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
    if not isinstance(file, str) or not _FILE.match(file):
        raise BadRequest(
            f'"file" must be a lowercase ASCII slug like "daily_life" '
            f"([a-z0-9_][a-z0-9_-]*, the file is wiki/<file>.md), got {file!r}"
        )
    return file


def check_name(name: object) -> str:
    """An item name: any language, whitespace collapsed, none of ``[[ ]] : | #``."""
    if not isinstance(name, str):
        raise BadRequest(f'"name" must be a string, got {name!r}')
    cleaned = " ".join(require_text(name, "name").split())
    if not cleaned:
        raise BadRequest('"name" is empty: an item needs a name (any language)')
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
    body = "\n".join(_BREAK.split(require_text(text, "text").strip()))
    if not body.strip():
        raise BadRequest('"text" is empty: there is nothing to write')
    if "\x00" in body:
        raise BadRequest('"text" contains a NUL character; notes are text')
    if "<!--" in body and "wikimem:" in body:
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
    return body


def render_meta(owner: str | None, source: str | None, ts: str | None) -> str:
    """``<!-- wikimem: owner=… | source=… | ts=… -->`` (wikimem's field order and escaping:
    ``|`` becomes ``/``; line breaks and ``-->`` cannot end the comment early)."""
    fields = []
    for key, value in (("owner", owner), ("source", source), ("ts", ts)):
        if value is None:
            continue
        clean = " ".join(require_text(value, key).replace("|", "/").replace("-->", "--").split())
        if clean:
            fields.append(f"{key}={clean}")
    return f"<!-- wikimem: {' | '.join(fields)} -->" if fields else ""


# ----------------------------------------------------------------------- lines


def split_lines(text: str) -> list[str]:
    """Lines with their own endings (``\\r\\n``, ``\\r`` or ``\\n``; the last may have none),
    numbered as the parser numbers them."""
    out: list[str] = []
    pos = 0
    for m in _BREAK.finditer(text):
        out.append(text[pos : m.end()])
        pos = m.end()
    if pos < len(text):
        out.append(text[pos:])
    return out


def newline_of(text: str) -> str:
    """The file's line-ending style: CRLF when most of its line breaks are CRLF."""
    crlf = text.count("\r\n")
    return "\r\n" if crlf and crlf >= text.count("\n") - crlf else "\n"


def sections(text: str) -> list[tuple[int, str]]:
    """The level-2 headings of a note as (0-based line, heading text), as the index reads them."""
    norm = _BREAK.sub("\n", text).lstrip("\ufeff")
    fm = front_matter_lines(norm)
    body = "\n".join(norm.split("\n")[fm:]) if fm else norm
    return [(n + fm, h) for n, lvl, h in headings(body) if lvl == 2]


def _block(heading: str, body: str, meta: str, nl: str) -> str:
    lines = [f"## {heading}", "", *body.split("\n")]
    if meta:
        lines += ["", meta]
    return nl.join(lines) + nl


def _append(old: str, block: str, nl: str) -> Edit:
    """``block`` added at the end, after a blank line (a final newline is supplied first)."""
    if not old:
        sep = ""
    elif old.endswith(("\n", "\r")):
        sep = nl
    else:
        sep = nl + nl
    line = len(split_lines(old)) + sep.count("\n") + (0 if old.endswith(("\n", "\r")) else -1)
    appended = sep + block
    return Edit(old + appended, line + 1 if old else 1, appended)


# ------------------------------------------------------------------------ edits


def new_file(title: str, heading: str, body: str, meta: str) -> Edit:
    """A new note: ``# title``, a blank line, and one section."""
    block = _block(heading, body, meta, "\n")
    head = f"# {title}\n\n"
    return Edit(head + block, 3, head + block)


def insert_diary_entry(old: str, time: str, body: str, meta: str) -> Edit:
    """Add a ``## time`` entry in chronological order: before the first ``## HH:MM`` section
    whose time is later (equal times keep their order: the new one goes after them), else
    at the end. Sections whose heading is not a time stay where they are."""
    nl = newline_of(old)
    block = _block(time, body, meta, nl)
    lines = split_lines(old)
    for n, heading in sections(old):
        m = _TIME.match(heading)
        if m and f"{int(m.group(1)):02d}:{m.group(2)}" > time:
            if n > 0 and not lines[n - 1].endswith(("\n", "\r")):
                break  # cannot happen (a heading starts a line); append instead
            return Edit("".join(lines[:n]) + block + nl + "".join(lines[n:]), n + 1)
    return _append(old, block, nl)


def find_item(text: str, name: str) -> tuple[int, int] | None:
    """The (start, end) 0-based line span of the last ``## name`` section (whitespace in the
    heading collapsed, as wikimem reads it: the last of repeated names wins), or None."""
    heads = sections(text)
    total = len(split_lines(text))
    found = None
    for i, (n, heading) in enumerate(heads):
        if " ".join(heading.split()) == name:
            found = (n, heads[i + 1][0] if i + 1 < len(heads) else total)
    return found


def item_state(text: str | None, name: str) -> str | None:
    """The section of item ``name`` as text with ``\\n`` line breaks, or None when absent."""
    if text is None:
        return None
    span = find_item(text, name)
    if span is None:
        return None
    return _BREAK.sub("\n", "".join(split_lines(text)[span[0] : span[1]]))


def upsert_item(old: str, name: str, body: str, meta: str) -> tuple[Edit, bool]:
    """Replace the body of item ``name`` (its heading line is kept byte for byte), or append
    a new ``## name`` section; returns (edit, created)."""
    nl = newline_of(old)
    span = find_item(old, name)
    if span is None:
        return _append(old, _block(name, body, meta, nl), nl), True
    start, end = span
    lines = split_lines(old)
    heading = lines[start] if lines[start].endswith(("\n", "\r")) else lines[start] + nl
    section = _block(name, body, meta, nl).split(nl, 1)[1]  # the part after the heading
    if end < len(lines):
        section += nl  # a blank line before the next section
    elif not lines[-1].endswith(("\n", "\r")):
        section = section[: -len(nl)]  # the file had no final newline: it still has none
    return Edit("".join(lines[:start]) + heading + section + "".join(lines[end:]), start + 1), False


def delete_item(old: str, name: str) -> str | None:
    """The text without item ``name``'s section (heading to the next one), or None when
    there is no such item.

    The last section of a file takes the blank line that set it apart with it (the one
    ``upsert_item`` put there when it added the item): adding an item and deleting it gives
    the file back byte for byte, and no file is left ending in a blank line."""
    span = find_item(old, name)
    if span is None:
        return None
    lines = split_lines(old)
    head, tail = "".join(lines[: span[0]]), "".join(lines[span[1] :])
    nl = newline_of(old)
    if not tail and head.endswith(nl + nl):
        head = head[: -len(nl)]
    return head + tail


def normalize(text: str) -> str:
    """``text`` with ``\\n`` line breaks only."""
    return _BREAK.sub("\n", text) if "\r" in text else text


def count_block(text: str, block: str) -> int:
    """How many times ``block`` (``\\n`` line breaks) occurs in ``text`` (any line breaks)."""
    return normalize(text).count(block)


def diary_block(time: str, body: str, meta: str) -> str:
    """The entry as written, with ``\\n`` line breaks (what ``count_block`` looks for)."""
    return _block(time, body, meta, "\n")
