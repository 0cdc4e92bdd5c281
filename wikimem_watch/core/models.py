"""Immutable records shared by every module: entries, hits and query results."""

from __future__ import annotations

import re
from dataclasses import MISSING, dataclass, field, fields
from types import FunctionType
from typing import Literal, TypeVar

# "x.png", "scan.pdf", "clip.mp3": a file name with an extension other than .md. A version
# number ("Release 1.2") is not an extension: it must start with a letter.
_ATTACHMENT = re.compile(r"\.[A-Za-z][A-Za-z0-9]{0,7}$")

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


T = TypeVar("T")


def _direct_init(cls: type[T]) -> type[T]:
    """Give a frozen slots dataclass an ``__init__`` that sets each field through its slot's
    own descriptor.

    The generated one must go through ``object.__setattr__(self, "name", value)`` for each
    field (the class's own ``__setattr__`` refuses), a lookup by name every time: 2.0 µs for
    an ``Entry`` against 1.3 µs, paid for every entry parsed and every one the store builds.
    Same parameters and defaults (the generated function's own), same object; a field with
    a default factory would need the generated code, so it is refused here."""
    names = [f.name for f in fields(cls)]  # type: ignore[arg-type]
    if any(f.default_factory is not MISSING for f in fields(cls)):  # type: ignore[arg-type]
        raise TypeError(f"{cls.__name__}: a default factory needs the generated __init__")
    generated = cls.__dict__["__init__"]
    setters = {f"_set_{name}": getattr(cls, name).__set__ for name in names}
    body = "".join(f"    _set_{name}(self, {name})\n" for name in names)
    namespace: dict[str, object] = {}
    exec(f"def __init__(self, {', '.join(names)}):\n{body}", setters, namespace)
    init = namespace["__init__"]
    assert isinstance(init, FunctionType) and isinstance(generated, FunctionType)
    init.__defaults__, init.__kwdefaults__ = generated.__defaults__, generated.__kwdefaults__
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__annotations__ = generated.__annotations__
    setattr(cls, "__init__", init)  # noqa: B010  # (mypy refuses assigning a method)
    return cls


_direct_init(Entry)


@dataclass(frozen=True, slots=True)
class ParsedNote:
    """Everything parsing one file yields: its entries and what went wrong, if anything."""

    path: str
    entries: tuple[Entry, ...]
    warnings: tuple[str, ...] = field(default=())
