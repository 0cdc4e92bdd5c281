"""What a full rescan would change, without applying it (``reindex --dry-run``).

The plan reads and hashes each note (no parsing, no tokenizing) and compares it with what
the engine holds: a note whose text or symlink target differs is ``changed``, one that is
gone (or no longer included) is ``removed``, and every note a rescan would skip is
``skipped`` (as ``reindex`` counts them).
Against an engine that holds nothing (no daemon: an in-process engine that has not
scanned), every note it would index is ``changed``.
"""

from __future__ import annotations

from .parse import text_hash
from .vault import SkipFile, iter_notes, read_note

TYPE_CHECKING = False
if TYPE_CHECKING:
    from .engine import Engine


def plan_scan(engine: Engine) -> dict[str, object]:
    """Counts and sorted paths of what ``engine.scan()`` would change; nothing is applied."""
    changed: list[str] = []
    skipped: list[str] = []
    unchanged = 0
    vanished: set[str] = set()
    with engine.apply_lock:  # no applier moves the index while we compare with it
        on_disk = list(iter_notes(engine.root, engine.note_filter, {}))
        for rel in on_disk:
            try:
                note = read_note(
                    engine.root, rel, follow_external=engine.config.follow_external_symlinks
                )
            except FileNotFoundError:
                vanished.add(rel)  # gone since the walk: removed below when it was indexed
                continue
            except SkipFile:
                skipped.append(rel)  # as a rescan does: every skipped file, every time
                continue
            old = engine.files.get(rel)
            if old is not None and old.text_hash == text_hash(note.text):
                if old.target == note.target:
                    unchanged += 1
                    continue
            changed.append(rel)
        removed = sorted(set(engine.files) - (set(on_disk) - vanished))
    return {
        "dry_run": True,
        "changed": len(changed),
        "removed": len(removed),
        "unchanged": unchanged,
        "skipped": len(skipped),
        "paths": {"changed": changed, "removed": removed, "skipped": skipped},
        "generation": engine.generation,
    }
