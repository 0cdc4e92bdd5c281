"""One Markdown file → immutable entries. Pure and tolerant: it takes text and never raises.

A section is a level-2 heading and everything up to the next one (``headings`` finds them as
CommonMark does, so a ``## `` inside a code fence is text). Diary files
(``diary/YYYY-MM-DD.md``) give one entry per section with the day from the file name and the
time from a ``## HH:MM`` heading; every other note gives one item per section. Prose before
the first ``##`` (after front matter and the ``# title``) is an item too, and a note without
sections is one item.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from dataclasses import replace
from datetime import date
from functools import lru_cache
from pathlib import PurePosixPath

from .frontmatter import name_list, note_ts, scalar, split_front_matter, str_list, valid_iso
from .headings import heading_spans
from .inline import front_links, heading_inline, read_inline
from .inline import parse_link as parse_link  # re-exported: where it was first
from .models import Entry, Kind, ParsedNote

_META_OPEN = re.compile(r"<!--\s*wikimem:")
_META_KEY = re.compile(r"[\w.-]+")
_BLANK_LINES = re.compile(r"\n{3,}")
_UNDERLINE = re.compile(r" {0,3}(?:=+|-+)[ \t]*")
_INDENT = re.compile(r"(?:[ \t]*\n)*([ \t]+)(?=\S)")  # the first line not blank: its indent
_TIME = re.compile(r"^([01]?\d|2[0-3]):([0-5]\d)$")
_DATE_STEM = re.compile(r"^\d{4}-\d{2}-\d{2}$")


def text_hash(text: str) -> str:
    """A short content hash: of a file's text, an entry's content, or an embedded text."""
    return hashlib.blake2b(text.encode(), digest_size=16).hexdigest()


def content_hash(heading: str, text: str) -> str:
    """The identity of an entry's content (heading and text), independent of its path."""
    return text_hash(f"{heading}\n{text}")


def diary_date(path: str) -> str | None:
    """``diary/2026-07-21.md`` → ``"2026-07-21"``; ``None`` when it is not a valid diary path."""
    # String operations, not PurePosixPath: this runs once per file at every scan and load.
    if not path.startswith("diary/") or not path.endswith(".md"):
        return None
    stem = path[path.rfind("/") + 1 : -3]
    if not _DATE_STEM.match(stem):
        return None
    try:
        return date.fromisoformat(stem).isoformat()
    except ValueError:
        return None


def parse_meta(body: str) -> dict[str, str] | None:
    """``owner=user:x | source=y | ts=…`` → dict; ``None`` when malformed (then it is text)."""
    fields: dict[str, str] = {}
    for part in body.split("|"):
        part = part.strip()
        if not part:
            continue
        key, sep, value = part.partition("=")
        key = key.strip()
        if not sep or not key or not _META_KEY.fullmatch(key):
            return None
        fields[key] = value.strip()
    return fields or None


class _Section:
    __slots__ = ("body", "heading", "line")

    def __init__(self, heading: str, line: int, body: str) -> None:
        self.heading, self.line, self.body = heading, line, body


def strip_meta(body: str, take: Callable[[str], bool]) -> str:
    """Remove the ``<!-- wikimem: … -->`` comments ``take(body)`` accepts; keep the rest.

    Linear in ``body``: an opening without a closing ``-->`` ends the search, because no
    later opening can be closed either (a lazy regex retried the whole tail per opening).
    """
    out: list[str] = []
    pos = 0
    while (m := _META_OPEN.search(body, pos)) is not None:
        close = body.find("-->", m.end())
        if close < 0:
            break
        if take(body[m.end() : close]):
            out.append(body[pos : m.start()])
        else:
            out.append(body[pos : close + 3])  # malformed: stays plain text
        pos = close + 3
    out.append(body[pos:])
    return "".join(out)


def _sections(body: str, line_offset: int) -> tuple[str | None, int, list[_Section]]:
    """Split the body into (title, its line, sections). Section 0 may be the headingless
    preamble.

    A section's text is a slice of ``body`` (from the line after its heading to the line
    before the next one), not a join of its lines: notes are mostly short sections.
    """
    title: str | None = None
    title_line = 1 + line_offset
    title_lines: tuple[int, ...] = ()
    starts: list[tuple[int, str, int]] = []
    for line, level, text, offset in heading_spans(body):
        if level == 2:
            starts.append((line, text, offset))
        elif level == 1 and not starts and title is None:
            title, title_line = text, line + 1 + line_offset
            underline = _setext(body, offset)  # a setext title: its lines to the underline
            last = body.count("\n", 0, underline) if underline >= 0 else line
            title_lines = tuple(range(line, last + 1))
    sections: list[_Section] = []
    # The lines before the first section: the title, and perhaps a preamble.
    pre_lines = body[: starts[0][2]].split("\n")[:-1] if starts else body.split("\n")
    pre = [ln for j, ln in enumerate(pre_lines) if j not in title_lines]
    pre_text = "\n".join(pre).strip("\n")
    if pre_text.strip():
        first_text = next(
            j for j, ln in enumerate(pre_lines) if ln.strip() and j not in title_lines
        )
        sections.append(_Section("", first_text + 1 + line_offset, pre_text))
    for n, (line, heading, offset) in enumerate(starts):
        eol = body.find("\n", offset)
        if not body.startswith("#", offset) and (underline := _setext(body, offset)) >= 0:
            eol = underline if underline < len(body) else -1  # its text starts after that
        if eol < 0:
            text = ""  # the heading is the last line
        elif n + 1 < len(starts):
            text = body[eol + 1 : starts[n + 1][2] - 1]
        else:
            text = body[eol + 1 :]
        sections.append(_Section(heading, line + 1 + line_offset, text))
    return title, title_line, sections


def _setext(body: str, offset: int) -> int:
    """Where the line ends that underlines the heading whose line starts at ``offset``
    (``Title`` / ``=====``, ``Item`` / ``---``, the heading's text perhaps on more lines: the
    text to the next heading belongs to it), or -1 for an ATX heading (``## Item``)."""
    if body[offset : offset + 4].lstrip(" ").startswith("#"):
        return -1
    eol = body.find("\n", offset)
    while eol >= 0:
        end = body.find("\n", eol + 1)
        end = len(body) if end < 0 else end
        if _UNDERLINE.fullmatch(body, eol + 1, end):
            return end
        if not body[eol + 1 : end].strip() or end == len(body):
            return -1  # the paragraph ended: not a heading's underline after all
        eol = end
    return -1


def parse_note(path: str, text: str) -> ParsedNote:
    """Parse one vault file. ``path`` is vault-relative with forward slashes."""
    try:
        return _parse(path, text)
    except Exception as exc:
        return ParsedNote(path, (), (f"could not parse: {type(exc).__name__}: {exc}",))


def _parse(path: str, text: str) -> ParsedNote:
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = text.lstrip("\ufeff")
    front, fm_lines, warnings = split_front_matter(text)
    body = "\n".join(text.split("\n")[fm_lines:]) if fm_lines else text
    day = diary_date(path)
    if day is None and "diary" in path and PurePosixPath(path).parts[:1] == ("diary",):
        warnings.append("diary file name is not a valid YYYY-MM-DD date; indexed as a note")
    kind: Kind = "diary" if day else "wiki"
    title_md, title_line, sections = _sections(body, fm_lines)
    title_fm = scalar(front.get("title"))
    title = title_fm or title_md or PurePosixPath(path).stem
    note_tags = tuple(dict.fromkeys(str_list(front.get("tags"))))
    aliases = name_list(front.get("aliases"))
    # A note's own date (Obsidian's `date:`): the time of its items that give none, for the
    # recency decay. A diary day's date is its file name's.
    front_ts = note_ts(front.get("date"), warnings) if kind == "wiki" else None
    linked = front_links(front) if front else ()
    if title_md:  # a "# title" links and tags the note as the front matter does
        title_links, title_tags = heading_inline(path, title_md)
        note_tags, linked = tuple(dict.fromkeys(note_tags + title_tags)), linked + title_links
    if not sections and kind == "wiki" and (title_md or title_fm or note_tags or aliases or linked):
        # A stub: a title (or only front matter) and nothing under it. Still one item,
        # named after its title, so it can be found and linked to, as an empty "## x" is.
        sections = [_Section("", title_line if title_md else 1, "")]
    entries: list[Entry] = []
    seen: dict[str, int] = {}
    for sec in sections:
        entry = _entry(path, kind, day, title, sec, note_tags, aliases, front_ts, seen, warnings)
        if entry is not None:
            entries.append(entry)
    if entries and linked:
        # Obsidian properties link the note ("up: '[[Projects]]'"): its first item carries them.
        first = entries[0]
        entries[0] = replace(first, links=tuple(dict.fromkeys(first.links + linked)))
    return ParsedNote(path, tuple(entries), tuple(warnings))


def _entry(
    path: str,
    kind: Kind,
    day: str | None,
    title: str,
    sec: _Section,
    note_tags: tuple[str, ...],
    aliases: tuple[str, ...],
    front_ts: str | None,
    seen: dict[str, int],
    warnings: list[str],
) -> Entry | None:
    meta: dict[str, str] = {}

    def _take_meta(body: str) -> bool:
        fields = parse_meta(body)
        if fields is None:
            return False
        meta.update(fields)  # last one wins, key by key
        return True

    raw = strip_meta(sec.body, _take_meta) if "<!--" in sec.body else sec.body
    # Stripped first (a run of blank lines is wholly inside the whitespace at an end or wholly
    # outside it): the run a removed comment leaves at the end no longer runs the pattern.
    visible = raw.strip()
    if "\n\n\n" in visible:
        visible = _BLANK_LINES.sub("\n\n", visible)
    if not visible and not sec.heading and sec.body:
        return None  # a preamble of only comments or blank lines (a stub's section is "")
    heading = sec.heading
    time = _diary_time(heading) if kind == "diary" else None
    head_links, head_tags = heading_inline(path, heading) if heading else ((), ())
    if head_tags:
        note_tags = tuple(dict.fromkeys(note_tags + head_tags))
    # The first line's indentation, which the strip took: indented code is code there too.
    indent = _INDENT.match(raw) if raw[:1] in (" ", "\t", "\n") else None
    lead = indent.group(1) if indent else ""
    indexed, links, tags = read_inline(path, visible, note_tags, lead)
    links = head_links + links
    ts = meta.get("ts")
    if ts is not None and not valid_iso(ts):
        warnings.append(f"line {sec.line}: metadata ts={ts!r} is not ISO-8601; ignored")
        ts = None
    ts = ts or front_ts
    # Unique in the note: the second "A" is "#A~2", and a heading written "A~2" is not.
    base = f"{path}#{heading}" if heading else path
    n = seen.get(base, 0) + 1
    entry_id = base if n == 1 else f"{base}~{n}"
    while n > 1 and entry_id in seen:
        n += 1
        entry_id = f"{base}~{n}"
    seen[base] = n
    seen.setdefault(entry_id, 1)
    return Entry(
        id=entry_id,
        kind=kind,
        path=path,
        heading=heading or title,
        line=sec.line,
        text=indexed,
        hash=content_hash(heading, indexed),
        date=day,
        time=time,
        ts=ts,
        owner=meta.get("owner"),
        source=meta.get("source"),
        meta=tuple(sorted(meta.items())),
        tags=tags,
        links=links,
        title=title,
        aliases=aliases,
    )


@lru_cache(maxsize=4096)
def _diary_time(heading: str) -> str | None:
    """A diary heading's time, ``"9:05"`` → ``"09:05"``, or None. Remembered: a day has a
    few of the 1,440 times, and every file repeats them."""
    m = _TIME.match(heading)
    return f"{int(m.group(1)):02d}:{m.group(2)}" if m else None
