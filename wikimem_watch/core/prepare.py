"""Preparing one note for the index: read, hash, parse and tokenize it, with no engine state.

This is the part of an apply that runs outside the engine's locks and, in a cold scan, in a
helper process beside the caller (``core/scan.py``). A ``FilePreparer`` holds only what its
configuration gives (the vault root, the note filter, the tokenizer), so it pickles as its
``Config`` and a helper started as a new interpreter builds the same one: what it prepares is
what the caller would have prepared.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from ..config import Config
from ..vectors.texts import embedding_texts
from .facts import asked_before, ends_asking, indexed_text, make_tokenizer
from .models import Entry
from .parse import parse_note, text_hash
from .vault import NoteFilter, SkipFile, dangling_target, link_target, read_note

log = logging.getLogger(__name__)

# A file whose mtime is this close to the moment it was read may change again within the
# same mtime tick (coarse clocks, FAT's 2 s): its recorded stat proves nothing, so a
# snapshot load hashes it ("racy git").
RACY_NS = 2_000_000_000


@dataclass(slots=True)
class FileRecord:
    """What one file contributed: its text hash, the index slots of its entries (in file
    order), parse warnings, and the vault-relative target when the file is a symlink to
    another note of the vault."""

    text_hash: str
    slots: Sequence[int] = ()
    warnings: tuple[str, ...] = ()
    target: str | None = None
    # (mtime_ns, size, racy, inode, ctime_ns) of the file as read, taken before the read: a
    # snapshot load trusts a file whose stat key (``stat_key``) still matches and is not racy
    # (ADR-0015). None: unknown.
    stat: tuple[int, int, bool, int, int] | None = None
    digest: int = 0  # of its entries' ids and content hashes (0 until computed)


@dataclass(slots=True)
class Prepared:
    """One file read and parsed outside the lock: gone, skipped (``record`` None and a
    ``skip`` reason), the same text as before (``same``: only ``record.stat`` is news), or
    new entries with their tokens and embedding texts."""

    rel: str
    gone: bool = False
    # Gone or skipped, a symlink to this vault path: read again when that path is applied.
    dangling: str | None = None
    skip: str = ""
    record: FileRecord | None = None
    entries: tuple[Entry, ...] = ()
    tokens: list[list[str]] = field(default_factory=list)
    asks: list[bool] = field(default_factory=list)  # each entry ends with a question
    embedded: list[str] = field(default_factory=list)
    same: bool = False


class FilePreparer:
    """Reads, hashes, parses and tokenizes notes of one vault as ``config`` says."""

    def __init__(self, config: Config) -> None:
        self.config = config
        self.root = config.vault
        self.tokenizer = make_tokenizer(config)
        self.note_filter = NoteFilter(config.include or ("*",), config.exclude)
        self.tracks_vectors = config.embed != "none"

    def __reduce__(self) -> tuple[type[FilePreparer], tuple[Config]]:
        return FilePreparer, (self.config,)  # the rest is built again from the config

    def __call__(
        self, rel: str, real_root: str | None = None, old: FileRecord | None = None
    ) -> Prepared:
        """Prepare the note at vault-relative ``rel``; ``old``: what it held before (its
        text and target unchanged → ``same``). ``real_root``: the vault root resolved."""
        if not self.note_filter.accepts(rel):
            return Prepared(rel, gone=True)
        stat = self.stat(rel)
        try:
            follow = self.config.follow_external_symlinks
            note = read_note(self.root, rel, follow_external=follow, real_root=real_root)
        except FileNotFoundError:
            return Prepared(rel, gone=True, dangling=dangling_target(self.root, rel, real_root))
        except SkipFile as exc:  # a symlink skipped with its target (binary, a FIFO): the
            # target fixed, it is read again (``dangling``), as a fresh scan would read it
            return Prepared(rel, skip=exc.reason, dangling=link_target(self.root, rel, real_root))
        digest = text_hash(note.text)
        if old is not None and old.text_hash == digest and old.target == note.target:
            return Prepared(
                rel, record=FileRecord(digest, target=note.target, stat=stat), same=True
            )
        parsed = parse_note(rel, note.text)
        warnings = parsed.warnings + ((note.warning,) if note.warning else ())
        for w in warnings:
            log.warning("%s: %s", rel, w)
        asking = ends_asking(parsed.entries)  # once: the terms and the store's flags need it
        return Prepared(
            rel,
            record=FileRecord(digest, (), warnings, note.target, stat),
            entries=parsed.entries,
            tokens=self.tokens(parsed.entries, asking),
            asks=[bool(q) for q in asking],
            embedded=embedding_texts(parsed.entries) if self.tracks_vectors else [],
        )

    def tokens(
        self, entries: Sequence[Entry], asking: Sequence[str] | None = None
    ) -> list[list[str]]:
        """The index terms of one file's entries (ADR-0009: headings as a field, and a diary
        entry read with the question the entry before it ended with; ``asking``:
        ``ends_asking(entries)`` when the caller has it). Removing the entries derives them
        again (ADR-0018), so this must depend on the entries alone."""
        weight = self.config.heading_weight
        if self.config.question_context:
            asked = asked_before(entries, asking)
        else:
            asked = [""] * len(entries)
        tokenize = self.tokenizer.tokenize
        return [tokenize(indexed_text(e, weight, q)) for e, q in zip(entries, asked, strict=True)]

    def stat(self, rel: str) -> tuple[int, int, bool, int, int] | None:
        """(mtime_ns, size, racy, inode, ctime_ns) of a note, through symlinks; None when it
        cannot be had."""
        try:
            st = os.stat(os.path.join(self.root, *rel.split("/")))
        except (OSError, ValueError):
            return None
        racy = st.st_mtime_ns >= time.time_ns() - RACY_NS
        return st.st_mtime_ns, st.st_size, racy, st.st_ino, st.st_ctime_ns


def stat_key(st: os.stat_result) -> tuple[int, int, int, int]:
    """What tells a file changed without reading it: (mtime_ns, size, inode, ctime_ns). The
    inode and ctime catch what mtime and size miss: a file renamed over another, a restored
    mtime (``touch -r``, ``cp -p``), a chmod, a symlink pointed elsewhere."""
    return st.st_mtime_ns, st.st_size, st.st_ino, st.st_ctime_ns


def record_key(stat: tuple[int, int, bool, int, int]) -> tuple[int, int, int, int]:
    """The ``stat_key`` of a ``FileRecord.stat``."""
    return stat[0], stat[1], stat[3], stat[4]
