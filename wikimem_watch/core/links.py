"""Where a link leads: the note a ``[[name]]`` names, the sections a ``#heading`` names in
it, and the reverse (backlinks), resolved as Obsidian does where the two can differ.

A mixin of :class:`~wikimem_watch.core.engine.Engine` (read under its lock). The rules:

- **Which note.** A name is looked up in the name table (path, path without ``.md``, file
  name, title, aliases). Several notes may answer; a note whose *path or file name* is the
  name wins over one whose title or alias is (Obsidian resolves a link by file name;
  aliases only help to write one), then for a wikimem link (``[[people:Ann]]``) a note under
  ``wiki/``, then the shallowest path, then the first in order. A path that names no note
  falls back to its file name (a Markdown link's path is read from the linking note's
  folder, and Obsidian may have written it from the vault's root or as a bare name).
  ``./x`` and ``/x`` are ``x``; Unicode is compared in NFC (macOS file names are NFD).
- **Which section.** Headings are compared as Obsidian writes them into a link: without
  ``: # | ^ [ ] %``, case and runs of spaces ignored, so ``[[2026-11-07#10 30]]`` (what
  Obsidian's autocomplete makes of ``## 10:30``) finds the entry. A ``###`` heading or a
  block id (``#^id``) inside a section names that section; ``A#B`` is B under A. A heading
  the note lacks still leads to the note: the link is not broken, its target moved.
- **Backlinks** and the unresolved links come from one :class:`LinkMap`, built once (each
  distinct link resolved once) and then kept entry by entry: the engine marks each entry it
  adds or drops, and the next read re-resolves the links of those alone. Where a link leads
  depends only on the name table, so the engine drops the map when that changes (a note
  added, removed or renamed, a title or alias changed) and the next read builds it again.
  Each call used to resolve every link of the vault under the lock, and then the first
  call after any edit did.
"""

from __future__ import annotations

import re
import threading
import unicodedata
from collections.abc import Callable, Iterable

from ..errors import NotFound
from .models import Entry, Link
from .names import Names, names_of, paths_named
from .store import EntryStore

TYPE_CHECKING = False
if TYPE_CHECKING:
    from .engine import FileRecord

# What Obsidian leaves out of a heading when it writes a link to it.
_LINK_UNSAFE = re.compile(r"[:#|^\[\]%]+")
# The text of a ### to ###### heading line; its closing #s are stripped in Python, because a
# lazy "(.+?)[ \t#]*$" backtracks quadratically over a line of " #" (hours for a long one).
_DEEPER_HEADING = re.compile(r"^ {0,3}#{3,6}[ \t]+(\S.*)$", re.M)


def heading_key(text: str) -> str:
    """A heading as links compare it (``## 10:30`` and ``#10 30`` alike)."""
    return " ".join(_LINK_UNSAFE.sub(" ", unicodedata.normalize("NFC", text)).split()).lower()


def name_key(target: str) -> str:
    """A link target as the name table is keyed: lower case, NFC, no ``./`` or ``/`` first."""
    key = unicodedata.normalize("NFC", target.strip()).lower()
    while key.startswith(("./", "/")):
        key = key[2:] if key.startswith("./") else key[1:]
    return key


class LinkMap:
    """Backlinks and unresolved links, by the slot of the entry that holds them."""

    # More marked entries than this and building the map anew is the cheaper way.
    MAX_MARKED = 20_000

    def __init__(self, slots: Iterable[int] = ()) -> None:
        self.by_note: dict[str, dict[int, list[Link]]] = {}  # note → slot → its links there
        self.nowhere: dict[int, list[Link]] = {}  # slot → its links to no note
        self._notes_of: dict[int, set[str]] = {}  # slot → the notes it links to
        self._marked: set[int] = set(slots)  # to be (re-)read
        self.stale = False  # too much marked: to be built anew

    def mark(self, slots: Iterable[int]) -> None:
        """Entries at ``slots`` were added or dropped: their links are re-read when next asked."""
        if not self.stale:
            self._marked.update(slots)
            if len(self._marked) > self.MAX_MARKED:
                self.stale, self._marked = True, set()

    def catch_up(self, store: EntryStore, resolve: Callable[[Link], str | None]) -> None:
        """Re-read the links of the marked entries (each distinct link resolved once)."""
        leads: dict[Link, str | None] = {}
        for slot in sorted(self._marked):
            self._forget(slot)
            if not store.has(slot):
                continue
            for link in store.links_of(slot):
                if link.attachment:
                    continue
                if link not in leads:
                    leads[link] = resolve(link)
                note = leads[link]
                if note is None:
                    self.nowhere.setdefault(slot, []).append(link)
                else:
                    self.by_note.setdefault(note, {}).setdefault(slot, []).append(link)
                    self._notes_of.setdefault(slot, set()).add(note)
        self._marked.clear()

    def _forget(self, slot: int) -> None:
        self.nowhere.pop(slot, None)
        for note in self._notes_of.pop(slot, ()):
            links = self.by_note[note]
            del links[slot]
            if not links:
                del self.by_note[note]


class EngineLinks:
    """Link reads over the engine's state (declared here for the type checker)."""

    lock: threading.RLock
    store: EntryStore
    files: dict[str, FileRecord]
    _names: Names | None
    _links: LinkMap | None

    @property
    def names(self) -> Names:
        """Note name → path(s), built on first use after a restore."""
        with self.lock:
            if self._names is None:
                title, aliases = self.store.title, self.store.aliases
                self._names = names_of(
                    (rel, title[r.slots[0]], aliases[r.slots[0]]) if r.slots else (rel, None, ())
                    for rel, r in self.files.items()
                )
            return self._names

    def resolve_note(self, link: Link) -> str | None:
        """The indexed note ``link`` leads to, or None (an empty note is still a note)."""
        with self.lock:
            wiki = link.style == "wikimem"
            note = self._note_named(link.target, wiki)
            if note is None and wiki and link.target == "file" and link.heading:
                note = self._note_named(link.heading, wiki)  # [[file:note]]
            return note

    def resolve_slots(self, link: Link) -> list[int]:
        """The slots a link points at: its section, else the whole note; [] when the note
        is not there."""
        with self.lock:
            note = self.resolve_note(link)
            if note is None:
                return []
            slots = list(self.files[note].slots)
            whole_note = link.style == "wikimem" and link.target == "file"
            if not link.heading or whole_note or not slots:
                return slots
            return self._section(slots, link.heading) or slots

    def resolve(self, link: Link) -> list[Entry]:
        """The entries a link points at (a section, or the whole note); [] when unresolvable."""
        with self.lock:
            return [self.store.entry(s) for s in self.resolve_slots(link)]

    def _note_named(self, target: str, wiki: bool) -> str | None:
        key = name_key(target).removesuffix(".md")
        names = self.names
        # A path that names no note ("people/Ann" from a Markdown link written from the vault
        # root, read from the linking note's folder) falls back to its file name.
        keys = (key, key.rsplit("/", 1)[-1]) if "/" in key else (key,)
        for name in keys:
            for candidate in (name, name + ".md"):
                paths = paths_named(names, candidate)
                if paths:
                    return min(paths, key=lambda p: _rank(p, name, wiki))
        return None

    def _section(self, slots: list[int], heading: str) -> list[int]:
        """The slots of ``heading`` among a note's sections ([] when it has none such)."""
        heading_of = self.store.heading.get
        parts = [p for p in heading.split("#") if p.strip()] or [heading]
        for part in reversed(parts):  # [[Note#A#B]]: B, under A
            want = heading_key(part)
            found = [s for s in slots if heading_key(heading_of(s) or "") == want]
            if found:
                return found
            for slot in slots:  # a ### heading, or a block id, inside a section
                text = self.store.text.get(slot) or ""
                if part.startswith("^"):
                    if re.search(rf"(?<!\S)\^{re.escape(part[1:].strip())}[ \t]*$", text, re.M):
                        return [slot]
                elif "#" in text and any(
                    heading_key(m.rstrip(" \t#")) == want for m in _DEEPER_HEADING.findall(text)
                ):
                    return [slot]
        return []

    def backlinks(self, rel: str) -> list[tuple[Entry, Link]]:
        """The entries of other notes with a link that leads to note ``rel``, by path and
        line (a note's own ``[[#Heading]]`` links lead into it, but are no backlinks)."""
        with self.lock:
            if rel not in self.files:
                raise NotFound(f"no indexed note at {rel!r} (paths are vault-relative)")
            leading = self._link_map().by_note.get(rel, {})
            found: list[tuple[Entry, Link]] = []
            for slot, links in leading.items():
                if self.store.path[slot] == rel:
                    continue
                entry = self.store.entry(slot)  # once per entry: it builds all its links
                found.extend((entry, link) for link in links)
            return sorted(found, key=lambda x: (x[0].path, x[0].line))

    def unresolved_links(self) -> list[dict[str, object]]:
        """Links to notes that are not there, by path and line (attachments such as
        ``![[x.png]]`` are not links to notes and are left out)."""
        with self.lock:
            found: list[dict[str, object]] = [
                {
                    "id": self.store.entry_id(slot),
                    "path": self.store.path[slot],
                    "line": int(self.store.line[slot]),
                    "target": link.target,
                }
                for slot, links in self._link_map().nowhere.items()
                for link in links
            ]
        return sorted(found, key=lambda u: (str(u["path"]), int(str(u["line"]))))

    def _link_map(self) -> LinkMap:
        """The link map, brought up to date (built when there is none or it went stale)."""
        if self._links is None or self._links.stale:
            self._links = LinkMap(self.store.linked_slots().tolist())
        self._links.catch_up(self.store, self.resolve_note)
        return self._links


def _rank(path: str, key: str, wiki: bool) -> tuple[int, int, int, str]:
    """How well ``path`` answers to name ``key``: by path or file name before by title or
    alias; for a wikimem link a note under wiki/ first; then the shallowest."""
    base = unicodedata.normalize("NFC", path.removesuffix(".md")).lower()
    how = 0 if base == key or base.rsplit("/", 1)[-1] == key else 1
    return (how, 0 if wiki and path.startswith("wiki/") else 1, path.count("/"), path)
