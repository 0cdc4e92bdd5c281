"""The write path's edits on the files themselves (``VaultWriter`` without a daemon): what
a write must never do to a person's bytes, whatever the file and the timing."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from wikimem_watch.core import edit
from wikimem_watch.daemon import writes
from wikimem_watch.daemon.vault_writer import VaultWriter

PEOPLE = "# p\n\n## Ann\n\nold\n\n## Bob\n\nb\n"


def wiki(tmp_path: Path, text: str) -> Path:
    (tmp_path / "wiki").mkdir(exist_ok=True)
    note = tmp_path / "wiki" / "p.md"
    note.write_text(text, encoding="utf-8")
    return note


def test_without_exchange_a_save_after_the_first_read_is_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a file system without RENAME_EXCHANGE the write compares, then replaces: an
    editor's save (temp file and rename) right after the write's first read is built on."""
    monkeypatch.setattr(writes, "_EXCHANGE", None)
    note = wiki(tmp_path, PEOPLE)
    real = edit.upsert_item
    calls: list[str] = []

    def saved_meanwhile(old: str, *args: str) -> tuple[edit.Edit, bool]:
        calls.append(old)
        if len(calls) == 1:
            swap = note.with_name(".p.md.swp")
            swap.write_text(PEOPLE + "\n## Person\n\nadded by the person\n", encoding="utf-8")
            os.rename(swap, note)
        return real(old, *args)

    monkeypatch.setattr(edit, "upsert_item", saved_meanwhile)
    VaultWriter(tmp_path).upsert_wiki("p", "Ann", "new")
    text = note.read_text(encoding="utf-8")
    assert "added by the person" in text and "\nnew\n" in text and "\nold\n" not in text
