"""Immutable records shared by every module: entries, hits and query results."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

# "x.png", "scan.pdf", "clip.mp3": a file of a kind Obsidian embeds or a vault keeps beside its
# notes. Not any dotted name: "Node.js", "Socket.io" and "ASP.NET" are names of notes, and
# "Release 1.2" a version.
_ATTACHMENT = re.compile(
    r"\.(?:avif|bmp|gif|jpe?g|png|svg|webp|heic|tiff?|ico|flac|m4a|mp3|ogg|opus|wav|aac|3gp"
    r"|mkv|mov|mp4|m4v|ogv|webm|avi|pdf|canvas|base|excalidraw|docx?|xlsx?|pptx?|odt|ods|odp"
    r"|rtf|epub|csv|tsv|txt|json|ya?ml|xml|html?|zip|tar|gz|7z|rar)$",
    re.I,
)

Kind = Literal["diary", "wiki"]


@dataclass(frozen=True, slots=True)
class Link:
    """A link found in an entry: ``[[file:name]]``, ``[[Note]]``, ``[[Note#Heading|alias]]``."""

    target: str  # note name or path as written, without heading or alias
    heading: str | None = None
    alias: str | None = None
    embed: bool = False
    style: Literal["wikimem", "obsidian"] = "obsidian"

    @property
    def attachment(self) -> bool:
        """True for a link to a file that is not a note (``![[x.png]]``, ``[[scan.pdf]]``):
        it never resolves to entries, and it is not an unresolved link to a note either."""
        name = self.target.rsplit("/", 1)[-1]
        return not name.lower().endswith(".md") and _ATTACHMENT.search(name) is not None


@dataclass(frozen=True, slots=True)
class Entry:
    """One indexed unit: a diary entry (``## HH:MM``) or a wiki/note item (``## name``)."""

    id: str  # stable and unique: "<path>#<slug>" (+ "~N" for a repeated heading)
    kind: Kind
    path: str  # vault-relative, forward slashes
    heading: str  # the section heading, or the note title for a section-less note
    line: int  # 1-based line of the heading (or of the first text line)
    text: str  # what is indexed: no metadata comment, no front matter
    hash: str  # content hash of (heading, text): the entry's identity in digests
    date: str | None = None  # "YYYY-MM-DD" for diary entries
    time: str | None = None  # "HH:MM" for diary entries with a time heading
    ts: str | None = None  # ISO-8601 from the metadata comment
    owner: str | None = None
    source: str | None = None
    meta: tuple[tuple[str, str], ...] = ()  # every key of the metadata comment, unknown ones too
    tags: tuple[str, ...] = ()
    links: tuple[Link, ...] = ()
    title: str | None = None  # the note's title (front matter, "# title" or file stem)
    aliases: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, object]:
        """The JSON shape of an entry: what every hit, ``day`` and ``note`` answer carries."""
        return {
            "id": self.id,
            "kind": self.kind,
            "path": self.path,
            "heading": self.heading,
            "line": self.line,
            "date": self.date,
            "time": self.time,
            "ts": self.ts,
            "owner": self.owner,
            "source": self.source,
            "tags": list(self.tags),
            "title": self.title,
            "text": self.text,
        }


@dataclass(frozen=True, slots=True)
class ParsedNote:
    """Everything parsing one file yields: its entries and what went wrong, if anything."""

    path: str
    entries: tuple[Entry, ...]
    warnings: tuple[str, ...] = field(default=())
