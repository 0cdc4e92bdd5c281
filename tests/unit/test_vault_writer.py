"""The write path's edits on the files themselves (``VaultWriter`` without a daemon): what
a write must never do to a person's bytes, whatever the file and the timing."""

from __future__ import annotations

import errno
import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from wikimem_watch.core import edit
from wikimem_watch.daemon import writes
from wikimem_watch.daemon.vault_writer import MAX_REAPPLY, VaultWriter
from wikimem_watch.errors import BadRequest, NotFound

PEOPLE = "# p\n\n## Ann\n\nold\n\n## Bob\n\nb\n"
TS = "2026-01-01T10:00:00+00:00"


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


def test_a_persons_fix_to_a_fresh_diary_entry_is_not_a_lost_write(tmp_path: Path) -> None:
    """The sweeper re-applies a write a save reverted; a save that only changed the entry's
    words keeps the entry, and must not get a second copy of it."""
    (tmp_path / "diary").mkdir()
    day = tmp_path / "diary" / "2026-01-01.md"
    day.write_text("# 2026-01-01\n\n## 08:00\n\nbreakfast\n", encoding="utf-8")
    writer = VaultWriter(tmp_path)
    writer.append_diary("walked teh dog", date="2026-01-01", time="10:00")
    written = day.read_text(encoding="utf-8")
    day.write_text(written.replace("teh", "the"), encoding="utf-8")
    writer.sweep()
    assert day.read_text(encoding="utf-8").count("## 10:00") == 1
    day.write_text("# 2026-01-01\n\n## 08:00\n\nbreakfast\n", encoding="utf-8")  # reverted
    writer.sweep()
    assert day.read_text(encoding="utf-8").count("## 10:00") == 1  # re-applied once


def test_two_entries_of_one_minute_that_a_save_overwrote_both_come_back_once(
    tmp_path: Path,
) -> None:
    """An agent often writes two entries of the same minute; a save from a buffer that lacked
    both used to lose both (the second write ended the first one's watch, and the second
    then saw one entry fewer than its "before", which read as a person's edit)."""
    (tmp_path / "diary").mkdir()
    day = tmp_path / "diary" / "2026-01-01.md"
    old = "## 09:00\n\nnine\n"
    day.write_text(old, encoding="utf-8")
    writer = VaultWriter(tmp_path)
    writer.append_diary("first", date="2026-01-01", time="10:00")
    writer.append_diary("second", date="2026-01-01", time="10:00")
    day.write_text(old + "\nedited\n", encoding="utf-8")  # a save that lacked both
    for _ in range(3):
        writer.sweep()
    text = day.read_text(encoding="utf-8")
    assert text.count("\nfirst\n") == 1 and text.count("\nsecond\n") == 1
    assert text.index("first") < text.index("second") and "\nedited\n" in text


def test_deleting_one_of_two_fresh_entries_of_a_minute_brings_neither_back_twice(
    tmp_path: Path,
) -> None:
    """A person deleting the first of two fresh entries of 10:00 leaves as many 10:00
    entries as there were before the second: not the second one lost, never written twice."""
    (tmp_path / "diary").mkdir()
    day = tmp_path / "diary" / "2026-01-01.md"
    day.write_text("## 09:00\n\nnine\n", encoding="utf-8")
    writer = VaultWriter(tmp_path)
    writer.append_diary("first", date="2026-01-01", time="10:00")
    writer.append_diary("second", date="2026-01-01", time="10:00")
    text = day.read_text(encoding="utf-8")
    start = text.index("## 10:00")
    day.write_text(text[:start] + text[text.index("## 10:00", start + 1) :], encoding="utf-8")
    writer.sweep()
    writer.sweep()
    text = day.read_text(encoding="utf-8")
    assert "first" not in text and text.count("\nsecond\n") == 1


def test_a_save_in_place_caught_between_truncate_and_write_gets_no_torn_entry(
    tmp_path: Path,
) -> None:
    """An editor saving in place truncates the note, then writes its buffer. The sweeper
    used to read the empty note as the entry lost and append it there, and the save's own
    write then overwrote its start, leaving a torn tail of it in the person's note."""
    (tmp_path / "diary").mkdir()
    day = tmp_path / "diary" / "2026-01-01.md"
    old = "## 09:00\n\nnine\n"
    day.write_text(old, encoding="utf-8")
    buffer = old + "\nedited by hand\n"  # the editor's buffer lacks our entry
    writer = VaultWriter(tmp_path)
    writer.append_diary("ten", date="2026-01-01", time="10:00")
    ours = day.read_text(encoding="utf-8")[len(old) :]
    fd = os.open(day, os.O_WRONLY | os.O_TRUNC)
    try:
        writer.sweep()  # between the save's truncate and its write
        os.write(fd, buffer.encode())
    finally:
        os.close(fd)
    writer.sweep()
    assert day.read_text(encoding="utf-8") == buffer + ours  # re-applied after the save


def test_a_write_saves_keep_overwriting_is_given_up_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """No daemon can stop an editor that saves blindly; after MAX_REAPPLY re-applies the
    save stands, and the log says so once instead of losing the write in silence."""
    note = wiki(tmp_path, PEOPLE)
    writer = VaultWriter(tmp_path)
    writer.upsert_wiki("p", "Ann", "new")
    for _ in range(MAX_REAPPLY):
        note.write_text(PEOPLE, encoding="utf-8")  # a blind save of the old text
        writer.sweep()
        assert "\nnew\n" in note.read_text(encoding="utf-8")  # re-applied
    assert "given" not in caplog.text and "not re-applying" not in caplog.text
    note.write_text(PEOPLE, encoding="utf-8")
    writer.sweep()
    writer.sweep()
    assert note.read_text(encoding="utf-8") == PEOPLE  # the save stands
    gave_up = [r for r in caplog.records if "not re-applying" in r.getMessage()]
    assert len(gave_up) == 1 and "item 'Ann'" in gave_up[0].getMessage()


def test_deleting_from_a_vault_with_no_wiki_folder_makes_none(tmp_path: Path) -> None:
    with pytest.raises(NotFound):
        VaultWriter(tmp_path).delete_wiki("p", "Ann")
    assert not (tmp_path / "wiki").exists()


def test_a_journal_line_for_a_file_name_that_is_not_utf8_is_written(tmp_path: Path) -> None:
    """Such a name (bytes as lone surrogates) made the journal raise, and the rest of the
    burst that held it was not applied."""
    from wikimem_watch.daemon.journal import Journal, read_journal

    journal = Journal(tmp_path)
    journal.external("create", "bb/a\udcff.md")
    journal.external("create", "bb/n1.md")
    entries = read_journal(tmp_path, None, 10)["entries"]
    assert [e["path"] for e in entries] == ["bb/a\udcff.md", "bb/n1.md"]  # type: ignore[index]


def test_a_journal_line_after_a_torn_last_line_starts_a_line_of_its_own(tmp_path: Path) -> None:
    """A writer that died mid-line left the journal without a final newline: the next line
    was glued to it, and neither read back."""
    from wikimem_watch.daemon.journal import JOURNAL_NAME, Journal, read_journal

    (tmp_path / JOURNAL_NAME).write_bytes(b'{"ts": "2026-07-21T08:00:00+00:00", "action": "ad')
    Journal(tmp_path).diary("2026-07-21", "09:00", "agent:a", None)
    page = read_journal(tmp_path, None, 10)
    entries = page["entries"]
    assert page["skipped"] == 1 and isinstance(entries, list)
    assert [(e["action"], e["time"]) for e in entries] == [("diary", "09:00")]


def test_a_missing_journal_reads_as_an_empty_one_with_every_field(tmp_path: Path) -> None:
    """docs/protocol.md promises ``skipped`` in every reply; with no journal.jsonl it was
    left out, and a cursor from before a rotation that removed the file was not a reset."""
    from wikimem_watch.daemon.journal import read_journal

    assert read_journal(tmp_path, None, 10) == {
        "entries": [],
        "cursor": 0,
        "reset": False,
        "skipped": 0,
    }
    assert read_journal(tmp_path, 2214, 10)["reset"] is True
    assert read_journal(tmp_path, 0, 10)["reset"] is False


def test_a_journal_that_shrank_below_the_cursor_is_read_on_from_its_start(
    tmp_path: Path,
) -> None:
    """After a rotation the reply said "reading restarted at its start" but held the file's
    last ``limit`` lines, with the cursor at its end: a follower never saw the first ones."""
    from wikimem_watch.daemon.journal import Journal, read_journal

    journal = Journal(tmp_path)
    for n in range(3):
        journal.diary("2026-07-21", f"0{n}:00", None, None)
    cursor = read_journal(tmp_path, None, 10)["cursor"]
    assert isinstance(cursor, str)  # "<offset>:<mark>"
    (tmp_path / "journal.jsonl").unlink()  # rotated
    for n in range(2):
        journal.diary("2026-07-22", f"1{n}:00", None, None)
    page = read_journal(tmp_path, cursor, 1)
    assert page["reset"] is True and isinstance(page["entries"], list)
    assert [e["time"] for e in page["entries"]] == ["10:00"]
    page = read_journal(tmp_path, page["cursor"], 10)  # type: ignore[arg-type]
    assert page["reset"] is False and isinstance(page["entries"], list)
    assert [e["time"] for e in page["entries"]] == ["11:00"]


def test_a_cursor_into_a_journal_rotated_and_grown_past_it_reads_it_from_its_start(
    tmp_path: Path,
) -> None:
    """A cursor below the new file's size was read on from, mid-line: the fragment was
    skipped, and the new file's lines before it were never seen (``reset`` false)."""
    from wikimem_watch.daemon.journal import Journal, read_journal

    journal = Journal(tmp_path)
    journal.diary("2026-07-21", "01:00", None, None)
    cursor = read_journal(tmp_path, None, 10)["cursor"]
    assert isinstance(cursor, str)  # "<offset>:<mark>"
    (tmp_path / "journal.jsonl").rename(tmp_path / "journal.1.jsonl")  # rotated
    for n in range(3):
        journal.diary("2026-07-22", f"1{n}:00", "agent:companion", None)
    page = read_journal(tmp_path, cursor, 10)
    assert page["reset"] is True and page["skipped"] == 0
    assert isinstance(page["entries"], list)
    assert [e["time"] for e in page["entries"]] == ["10:00", "11:00", "12:00"]
    again = read_journal(tmp_path, page["cursor"], 10)  # type: ignore[arg-type]
    assert again["reset"] is False and again["entries"] == []


def test_a_cursor_into_a_rotated_journal_that_falls_on_a_line_start_of_the_new_one_resets(
    tmp_path: Path,
) -> None:
    """A cursor was a byte offset only: after a rotation, one that fell exactly on a line
    start of the new file read on from there (``reset`` false) and the new file's lines
    before it were never seen."""
    from wikimem_watch.daemon.journal import JOURNAL_NAME, Journal, read_journal

    journal = Journal(tmp_path)
    journal.diary("2026-07-21", "01:00", None, None)
    cursor = read_journal(tmp_path, None, 10)["cursor"]
    (tmp_path / JOURNAL_NAME).rename(tmp_path / "journal.1.jsonl")  # rotated
    for n in range(3):  # lines of one length: the old cursor is the second line's start
        journal.diary("2026-07-22", f"1{n}:00", None, None)
    starts = {len(ln) for ln in (tmp_path / JOURNAL_NAME).read_bytes().splitlines(True)}
    assert len(starts) == 1 and int(str(cursor).split(":")[0]) == starts.pop()
    page = read_journal(tmp_path, cursor, 10)  # type: ignore[arg-type]
    assert page["reset"] is True and isinstance(page["entries"], list)
    assert [e["time"] for e in page["entries"]] == ["10:00", "11:00", "12:00"]
    again = read_journal(tmp_path, page["cursor"], 10)  # type: ignore[arg-type]
    assert again["reset"] is False and again["entries"] == []


def test_a_cursor_into_a_journal_emptied_and_refilled_in_place_resets(tmp_path: Path) -> None:
    """Truncated in place (logrotate's copytruncate) and refilled to the same line start:
    the file is the same inode, but not the lines the cursor followed."""
    from wikimem_watch.daemon.journal import JOURNAL_NAME, Journal, read_journal

    journal = Journal(tmp_path)
    journal.diary("2026-07-21", "01:00", "agent:a", None)
    cursor = read_journal(tmp_path, None, 10)["cursor"]
    (tmp_path / JOURNAL_NAME).write_bytes(b"")
    journal.diary("2026-07-22", "10:00", "agent:b", None)
    journal.diary("2026-07-22", "11:00", "agent:b", None)
    page = read_journal(tmp_path, cursor, 10)  # type: ignore[arg-type]
    assert page["reset"] is True and isinstance(page["entries"], list)
    assert [e["time"] for e in page["entries"]] == ["10:00", "11:00"]


def test_a_cursor_follows_a_journal_that_a_sync_tool_replaced_with_a_longer_copy(
    tmp_path: Path,
) -> None:
    """A synced vault gets the journal as a new file (a new inode) holding the same lines
    and more: the cursor still names its place, nothing is read twice."""
    from wikimem_watch.daemon.journal import JOURNAL_NAME, Journal, read_journal

    journal = Journal(tmp_path)
    journal.diary("2026-07-21", "01:00", None, None)
    cursor = read_journal(tmp_path, None, 10)["cursor"]
    journal.diary("2026-07-21", "02:00", None, None)
    copy = tmp_path / "journal.sync-tmp"
    copy.write_bytes((tmp_path / JOURNAL_NAME).read_bytes())
    copy.replace(tmp_path / JOURNAL_NAME)
    page = read_journal(tmp_path, cursor, 10)  # type: ignore[arg-type]
    assert page["reset"] is False and isinstance(page["entries"], list)
    assert [e["time"] for e in page["entries"]] == ["02:00"]


def test_a_plain_offset_cursor_from_before_still_reads_on(tmp_path: Path) -> None:
    """Cursors of the earlier shape (a byte offset) read on as they did."""
    from wikimem_watch.daemon.journal import JOURNAL_NAME, Journal, read_journal

    journal = Journal(tmp_path)
    journal.diary("2026-07-21", "01:00", None, None)
    offset = (tmp_path / JOURNAL_NAME).stat().st_size
    journal.diary("2026-07-21", "02:00", None, None)
    page = read_journal(tmp_path, offset, 10)
    assert page["reset"] is False and isinstance(page["entries"], list)
    assert [e["time"] for e in page["entries"]] == ["02:00"]
    assert read_journal(tmp_path, offset + 1, 10)["reset"] is True  # mid-line, as before


def test_only_a_cursor_of_a_reply_or_a_plain_offset_is_taken_as_since() -> None:
    from wikimem_watch.daemon.journal import parse_cursor

    assert parse_cursor(2214) == (2214, None)
    assert parse_cursor("2214:6f1c0a9e3b7d5248") == (2214, "6f1c0a9e3b7d5248")
    for bad in (True, -1, "2214", "2214:", "x:6f1c0a9e3b7d5248", "２:6f1c0a9e3b7d5248", 1.5):
        assert parse_cursor(bad) is None, bad


def test_an_entry_filed_at_another_day_or_time_happened_then() -> None:
    """Without ``ts``, a backdated entry's ``ts`` is its own day and time: the recency decay
    read the moment it was written down, so an old entry ranked as fresh."""
    from datetime import datetime

    from wikimem_watch.daemon.stamps import when
    from wikimem_watch.errors import BadRequest

    assert when(None, "2026-11-20", "12:00", "Asia/Shanghai") == (
        "2026-11-20T12:00:00+08:00",
        "2026-11-20",
        "12:00",
    )
    ts, day, hhmm = when(None, None, None, "UTC")  # now: the precise moment
    assert datetime.fromisoformat(ts).strftime("%Y-%m-%d %H:%M") == f"{day} {hhmm}"
    given = "2026-01-01T10:00:00+00:00"
    assert when(given, "2026-11-20", "12:00", None)[0] == given  # a given ts wins
    with pytest.raises(BadRequest, match="outside the years"):
        when("9999-12-31T23:59:00+00:00", None, None, "Asia/Shanghai")


def test_a_writer_takes_the_vault_as_a_string_too(tmp_path: Path) -> None:
    writer = VaultWriter(str(tmp_path))
    writer.append_diary("kites", date="2026-01-01", time="10:00")
    assert "kites" in (tmp_path / "diary" / "2026-01-01.md").read_text(encoding="utf-8")


def test_writers_that_share_no_daemon_take_turns_and_keep_every_item(tmp_path: Path) -> None:
    """Each writer opens the vault lock on its own, as two processes would (a CLI and an MCP
    server writing with no daemon): without the lock the compare-and-swap let the later of
    two writes of one file win, and items were lost."""
    wiki(tmp_path, "# p\n")
    names = [f"P{i}" for i in range(16)]
    with ThreadPoolExecutor(len(names)) as pool:
        list(pool.map(lambda n: VaultWriter(tmp_path).upsert_wiki("p", n, f"about {n}"), names))
    text = (tmp_path / "wiki" / "p.md").read_text(encoding="utf-8")
    assert [n for n in names if f"## {n}\n" not in text] == []


def test_a_writer_waits_for_the_daemon_s_writers_and_gives_up_with_nothing_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    note = wiki(tmp_path, PEOPLE)
    monkeypatch.setattr(writes, "LOCK_WAIT_S", 0.05)
    with writes.vault_lock(tmp_path, shared=True), writes.vault_lock(tmp_path, shared=True):
        # Shared holders (the daemon's writers) do not wait for each other...
        with pytest.raises(writes.WriteConflict, match="holds the vault's write lock"):
            VaultWriter(tmp_path).upsert_wiki("p", "Cy", "c")  # ...an exclusive one does
    assert note.read_text(encoding="utf-8") == PEOPLE
    VaultWriter(tmp_path).upsert_wiki("p", "Cy", "c")  # released: it goes through
    assert "## Cy\n" in note.read_text(encoding="utf-8")


def test_a_file_system_without_flock_is_written_without_the_lock(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    note = wiki(tmp_path, PEOPLE)

    def no_flock(fd: int, op: int) -> None:
        raise OSError(errno.ENOLCK, "No locks available")

    monkeypatch.setattr(writes.fcntl, "flock", no_flock)
    VaultWriter(tmp_path).upsert_wiki("p", "Cy", "c")
    assert "## Cy\n" in note.read_text(encoding="utf-8")


def test_a_journal_line_longer_than_one_reply_is_skipped_not_a_wall(tmp_path: Path) -> None:
    from wikimem_watch.daemon.journal import JOURNAL_NAME, MAX_READ_BYTES, Journal, read_journal

    Journal(tmp_path).diary("2026-07-21", "09:00", "agent:a", None)
    cursor = read_journal(tmp_path, None, 10)["cursor"]
    assert isinstance(cursor, str)  # "<offset>:<mark>"
    with (tmp_path / JOURNAL_NAME).open("ab") as f:  # a hand-made line of 5 MiB
        f.write(b'{"note": "' + b"x" * (MAX_READ_BYTES + 2**20) + b'"}\n')
    Journal(tmp_path).diary("2026-07-21", "10:00", "agent:a", None)
    page = read_journal(tmp_path, cursor, 10)
    assert page["entries"] == [] and page["skipped"] == 1
    page = read_journal(tmp_path, page["cursor"], 10)  # type: ignore[arg-type]
    assert isinstance(page["entries"], list)
    assert [e["time"] for e in page["entries"]] == ["10:00"]


def test_a_long_journal_line_still_being_written_is_read_next_time(tmp_path: Path) -> None:
    from wikimem_watch.daemon.journal import JOURNAL_NAME, MAX_READ_BYTES, read_journal

    (tmp_path / JOURNAL_NAME).write_bytes(b"x" * (MAX_READ_BYTES + 10))  # no newline yet
    page = read_journal(tmp_path, 0, 10)
    assert page["entries"] == [] and page["cursor"] == 0


def test_a_file_system_that_refuses_the_write_says_so_instead_of_an_internal_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A full disk (or a read-only file system) is the file system's answer, not a bug: the
    caller gets a write error naming the note and the reason, and the note is untouched."""
    note = wiki(tmp_path, PEOPLE)

    def full(path: Path, data: bytes, mode: int) -> Path:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))

    monkeypatch.setattr(writes, "_temp", full)
    with pytest.raises(writes.WriteFailed, match="cannot write 'wiki/p.md': No space left"):
        VaultWriter(tmp_path).upsert_wiki("p", "Ann", "new")
    assert note.read_text(encoding="utf-8") == PEOPLE


def test_an_append_the_file_refuses_is_not_reported_as_other_writers_changing_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A day file that cannot be opened for writing (no permission, ``chattr +i``) used to be
    read and retried 16 times and then reported as "kept changing under other writers"."""
    (tmp_path / "diary").mkdir()
    day = tmp_path / "diary" / "2026-07-21.md"
    day.write_text("## 09:00\n\nnine\n", encoding="utf-8")
    real_open = os.open

    def refuse_appends(path: object, flags: int, *args: int) -> int:
        if flags & os.O_APPEND and str(path) == str(day):
            raise PermissionError(errno.EPERM, os.strerror(errno.EPERM), str(path))
        return real_open(path, flags, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(writes.os, "open", refuse_appends)
    with pytest.raises(writes.WriteFailed, match="Operation not permitted"):
        VaultWriter(tmp_path).append_diary("ten", date="2026-07-21", time="10:00")
    assert day.read_text(encoding="utf-8") == "## 09:00\n\nnine\n"


def test_a_read_only_note_is_not_written_even_by_an_owner_who_could_rename_over_it(
    tmp_path: Path,
) -> None:
    """``chmod a-w`` is the person's lock on a note; a write by rename would pass it (and so
    would root), so the mode is read and the write refused with nothing changed."""
    note = wiki(tmp_path, PEOPLE)
    note.chmod(0o444)
    (tmp_path / "diary").mkdir()
    day = tmp_path / "diary" / "2026-07-21.md"
    day.write_text("## 09:00\n\nnine\n", encoding="utf-8")
    day.chmod(0o400)
    writer = VaultWriter(tmp_path)
    with pytest.raises(writes.WriteFailed, match="'wiki/p.md' is read-only"):
        writer.upsert_wiki("p", "Ann", "new")
    with pytest.raises(writes.WriteFailed, match="read-only"):
        writer.delete_wiki("p", "Bob")
    for at in ("10:00", "08:00"):  # an append and an insertion
        with pytest.raises(writes.WriteFailed, match="read-only"):
            writer.append_diary("ten", date="2026-07-21", time=at)
    assert note.read_text(encoding="utf-8") == PEOPLE
    assert day.read_text(encoding="utf-8") == "## 09:00\n\nnine\n"
    note.chmod(0o644)
    writer.upsert_wiki("p", "Ann", "new")
    assert "new" in note.read_text(encoding="utf-8")


def _journal_items(tmp_path: Path) -> list[tuple[object, object]]:
    from wikimem_watch.daemon.journal import read_journal

    lines = read_journal(tmp_path, None, 50)["entries"]
    return [(e["action"], e["item"]) for e in lines]  # type: ignore[index]


def test_an_item_named_in_another_case_is_the_item_the_note_has(tmp_path: Path) -> None:
    """``upsert_wiki name="milk"`` beside ``## Milk`` added a second item, the old one still
    searchable, and ``delete_wiki name="MILK"`` found nothing: both touch ``## Milk`` now, as
    a ``[[p:milk]]`` link reaches it, and the reply and the journal name it as written."""
    note = wiki(tmp_path, "# p\n\n## Milk\n\n2 litres\n\n## Eggs\n\n6\n")
    writer = VaultWriter(tmp_path)
    reply = writer.upsert_wiki("p", "milk", "1 litre")
    assert note.read_text(encoding="utf-8").startswith("# p\n\n## Milk\n\n1 litre\n\n<!--")
    assert (reply["heading"], reply["id"], reply["created"]) == ("Milk", "wiki/p.md#Milk", False)
    assert writer.delete_wiki("p", "MILK")["item"] == "Milk"
    assert note.read_text(encoding="utf-8") == "# p\n\n## Eggs\n\n6\n"
    assert _journal_items(tmp_path) == [("update", "Milk"), ("remove", "Milk")]


def test_items_that_differ_in_case_only_are_never_merged_by_a_write(tmp_path: Path) -> None:
    """Two sections a person wrote ``## Milk`` and ``## MILK`` stay two items: a name written
    as one of them touches that one only; a name written as neither is refused, naming both."""
    old = "# p\n\n## Milk\n\na\n\n## MILK\n\nb\n"
    note = wiki(tmp_path, old)
    writer = VaultWriter(tmp_path)
    for write in (
        lambda: writer.upsert_wiki("p", "milk", "c"),
        lambda: writer.delete_wiki("p", "milk"),
    ):
        with pytest.raises(BadRequest, match=r"ambiguous.*'Milk' \(line 3\), 'MILK' \(line 7\)"):
            write()
        assert note.read_text(encoding="utf-8") == old
    assert writer.upsert_wiki("p", "MILK", "c")["line"] == 7
    assert writer.delete_wiki("p", "Milk")["item"] == "Milk"
    assert note.read_text(encoding="utf-8").startswith("# p\n\n## MILK\n\nc\n\n<!--")


def test_upserting_the_item_named_after_a_note_s_title_replaces_its_text_in_place(
    tmp_path: Path,
) -> None:
    """A note with no ``##`` is one item named after its title: ``upsert_wiki`` of that
    name added a ``## Groceries`` section beside it (two items of one name, the old text
    still found); it replaces the text under the title now, as an update."""
    (tmp_path / "wiki").mkdir()
    note = tmp_path / "wiki" / "groceries.md"
    note.write_text("# Groceries\n\nMilk, eggs.\n", encoding="utf-8")
    reply = VaultWriter(tmp_path).upsert_wiki("groceries", "Groceries", "Bread", ts=TS)
    assert (
        note.read_text(encoding="utf-8") == f"# Groceries\n\nBread\n\n<!-- wikimem: ts={TS} -->\n"
    )
    assert (reply["id"], reply["heading"], reply["created"]) == (
        "wiki/groceries.md",
        "Groceries",
        False,
    )
    assert _journal_items(tmp_path) == [("update", "Groceries")]
    VaultWriter(tmp_path).delete_wiki("groceries", "groceries")
    assert note.read_text(encoding="utf-8") == "# Groceries\n"
