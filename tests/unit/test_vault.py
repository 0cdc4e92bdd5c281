"""Which files are notes, and reading them as untrusted input (ADR-0011)."""

from __future__ import annotations

import contextlib
import os
import socket
import tempfile
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import write
from wikimem_watch.config import load_config
from wikimem_watch.core.engine import Engine
from wikimem_watch.core.vault import (
    MAX_NOTE_BYTES,
    NoteFilter,
    SkipFile,
    iter_notes,
    linked_out,
    notes_below,
    read_note,
)


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    write(root, "wiki/people.md", "# People\n\n## Ann\nAnn likes sailing.\n")
    return root


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    secret = tmp_path / "outside" / "secret.txt"
    secret.parent.mkdir()
    secret.write_text("## root\nhunter2 the secret password\n", encoding="utf-8")
    return secret


def fresh(root: Path, **overrides: object) -> Engine:
    engine = Engine(load_config(root, overrides))
    engine.scan()
    return engine


def test_a_fifo_named_like_a_note_is_skipped_without_blocking(vault: Path) -> None:
    os.mkfifo(vault / "wiki" / "x.md")
    with pytest.raises(SkipFile, match="named pipe"):
        read_note(vault, "wiki/x.md")
    engine = fresh(vault)  # the scan finishes: nothing waits for a writer on the pipe
    assert engine.skipped == {"wiki/x.md": "not a regular file (named pipe)"}
    assert list(engine.files) == ["wiki/people.md"]


def test_a_unix_socket_named_like_a_note_is_skipped(vault: Path) -> None:
    # AF_UNIX paths are short: bind in the temp dir, then move the socket into the vault.
    short = Path(tempfile.gettempdir()) / f"wmw-{uuid.uuid4().hex[:8]}.md"
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        server.bind(str(short))
        os.rename(short, vault / "wiki" / "sock.md")
        with pytest.raises(SkipFile, match="socket"):
            read_note(vault, "wiki/sock.md")
    finally:
        server.close()
        short.unlink(missing_ok=True)


def test_a_device_symlinked_into_the_vault_is_never_read(vault: Path) -> None:
    (vault / "zero.md").symlink_to("/dev/zero")
    with pytest.raises(SkipFile):
        read_note(vault, "zero.md", follow_external=True)  # even when following: not regular


def test_a_nul_byte_after_the_first_8_kib_marks_the_file_binary(vault: Path) -> None:
    (vault / "wiki" / "late.md").write_bytes(b"## a\n" + b"x" * 20_000 + b"\0tail\n")
    with pytest.raises(SkipFile, match="binary"):
        read_note(vault, "wiki/late.md")


def test_a_long_note_is_read_whole_and_a_symlinks_target_is_named(vault: Path) -> None:
    text = "## Long\n" + "多字节 words over many reads\n" * 20_000  # ~0.6 MB
    write(vault, "wiki/long.md", text)
    (vault / "alias.md").symlink_to(Path("wiki") / "long.md")
    note = read_note(vault, "alias.md", real_root=os.path.realpath(vault))
    assert note.text == text and note.target == "wiki/long.md"
    assert read_note(vault, "wiki/long.md").target is None


def test_reading_goes_on_to_the_end_of_a_file_that_grew_and_stops_past_the_limit(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from wikimem_watch.core import vault as vault_module

    def fed(data: bytes) -> int:
        """A pipe carrying ``data`` (written by a thread): reads come in pieces."""
        read_end, write_end = os.pipe()

        def feed() -> None:
            with contextlib.suppress(BrokenPipeError), os.fdopen(write_end, "wb") as out:
                out.write(data)  # the reader may stop at the limit and close its end

        threading.Thread(target=feed, daemon=True).start()
        return read_end

    data = bytes(range(256)) * 1000  # 256 kB: more than a pipe holds at once
    fd = fed(data)
    try:
        assert vault_module._read_fd(fd, 10) == data  # stat said 10 bytes; it grew
    finally:
        os.close(fd)
    monkeypatch.setattr(vault_module, "MAX_NOTE_BYTES", 100_000)
    fd = fed(data)
    try:
        assert vault_module._read_fd(fd, 10) == data[:100_001]  # one past: "too big"
    finally:
        os.close(fd)


def test_a_note_over_the_size_limit_is_skipped(vault: Path) -> None:
    with open(vault / "big.md", "wb") as fh:
        fh.truncate(MAX_NOTE_BYTES + 1)  # sparse: no 8 MiB written
    with pytest.raises(SkipFile, match="larger than"):
        read_note(vault, "big.md")


def test_a_symlink_leading_outside_the_vault_is_skipped_and_reported(
    vault: Path, outside: Path
) -> None:
    (vault / "passwd.md").symlink_to(outside)
    engine = fresh(vault)
    assert "passwd.md" not in engine.files
    assert "outside the vault" in engine.skipped["passwd.md"]
    assert not any("hunter2" in e.text for e in engine.entries.values())


def test_following_external_symlinks_is_an_explicit_choice(vault: Path, outside: Path) -> None:
    (vault / "passwd.md").symlink_to(outside)
    engine = fresh(vault, follow_external_symlinks=True)
    assert "hunter2" in engine.entries_of("passwd.md")[0].text
    assert engine.skipped == {}


def test_a_symlink_inside_the_vault_is_indexed_and_follows_its_target(vault: Path) -> None:
    (vault / "alias.md").symlink_to(Path("wiki") / "people.md")
    engine = fresh(vault)
    assert "sailing" in engine.entries_of("alias.md")[0].text
    target = vault / "wiki" / "people.md"
    target.write_text("# People\n\n## Ann\nAnn now rows.\n", encoding="utf-8")
    engine.apply(["wiki/people.md"])  # the watcher reports the target only
    assert "rows" in engine.entries_of("alias.md")[0].text
    assert engine.digest() == fresh(vault).digest()
    target.unlink()
    engine.apply(["wiki/people.md"])
    assert engine.files == {} and engine.digest() == fresh(vault).digest()


def test_a_symlink_skipped_with_its_target_is_read_again_when_the_target_is_fixed(
    vault: Path,
) -> None:
    # A skipped symlink kept no target, so applying the target (all the watcher reports)
    # left it skipped while a fresh scan indexed it.
    target = write(vault, "wiki/big.md", "# Big\n\nbinary\x00 here\n")
    (vault / "alias.md").symlink_to(Path("wiki") / "big.md")
    engine = fresh(vault)
    assert set(engine.skipped) == {"alias.md", "wiki/big.md"}
    target.write_text("# Big\n\nfixed text\n", encoding="utf-8")
    engine.apply(["wiki/big.md"])
    assert set(engine.files) == {"alias.md", "wiki/big.md", "wiki/people.md"}
    assert engine.skipped == {}
    assert engine.digest() == fresh(vault).digest()
    target.write_bytes(b"# Big\n\nbinary\x00 again\n")
    engine.apply(["wiki/big.md"])
    assert set(engine.skipped) == {"alias.md", "wiki/big.md"}
    assert set(engine.files) == {"wiki/people.md"}


def test_a_folder_symlinked_out_of_the_vault_named_like_a_note_is_a_folder_not_a_note(
    vault: Path, outside: Path
) -> None:
    # The walk names it as a folder it does not enter; read as a note (from an event) it
    # was "skipped: symlink to ... outside the vault" as well, a second line in ``status``.
    (vault / "ext.md").symlink_to(outside.parent, target_is_directory=True)
    with pytest.raises(FileNotFoundError):
        read_note(vault, "ext.md")
    engine = fresh(vault)
    assert list(engine.linked_dirs) == ["ext.md"] and engine.skipped == {}
    engine.apply(["ext.md"])
    assert engine.skipped == {}


def test_a_symlink_loop_broken_by_a_deletion_is_dropped_as_a_fresh_scan_drops_it(
    vault: Path,
) -> None:
    # ``a.md -> b.md -> a.md``: both skipped. ``b.md`` deleted leaves ``a.md`` dangling (no
    # note), made again as a note gives ``a.md`` its text; ``a.md`` stayed skipped.
    (vault / "a.md").symlink_to("b.md")
    (vault / "b.md").symlink_to("a.md")
    engine = fresh(vault)
    assert set(engine.skipped) == {"a.md", "b.md"}
    (vault / "b.md").unlink()
    engine.apply(["b.md"])
    assert engine.skipped == {} and engine.digest() == fresh(vault).digest()
    write(vault, "b.md", "# B\n\nbee\n")
    engine.apply(["b.md"])
    assert {"a.md", "b.md"} <= set(engine.files)
    assert engine.digest() == fresh(vault).digest()


def test_a_symlinked_directory_is_not_walked_and_an_outside_one_is_reported(
    vault: Path, outside: Path
) -> None:
    (outside.parent / "leak.md").write_text("## x\nhunter2\n", encoding="utf-8")
    (vault / "ext").symlink_to(outside.parent, target_is_directory=True)
    (vault / "inner").symlink_to(vault / "wiki", target_is_directory=True)
    linked: dict[str, str] = {}
    assert list(iter_notes(vault, NoteFilter(), linked)) == ["wiki/people.md"]
    assert list(linked) == ["ext"] and "outside the vault" in linked["ext"]
    assert notes_below(vault, "ext", NoteFilter()) == []  # a directory event for the link
    assert notes_below(vault, "inner", NoteFilter()) == []
    assert notes_below(vault, "wiki", NoteFilter()) == ["wiki/people.md"]
    engine = fresh(vault)
    assert engine.linked_dirs == linked and "ext/leak.md" not in engine.files
    with pytest.raises(FileNotFoundError):  # no note (the folder is reported, above)
        read_note(vault, "ext/leak.md")  # a path through the link, e.g. from an event


def test_a_dangling_symlink_is_a_file_that_is_gone(vault: Path, tmp_path: Path) -> None:
    (vault / "dangling.md").symlink_to(tmp_path / "nowhere.md")
    with pytest.raises(FileNotFoundError):
        read_note(vault, "dangling.md")
    assert fresh(vault).skipped == {}


@pytest.fixture
def fifo_writer(vault: Path) -> Iterator[Path]:
    """A FIFO with a writer that never writes: a blocking read of it would never end."""
    fifo = vault / "held.md"
    os.mkfifo(fifo)
    stop = threading.Event()

    def hold() -> None:
        fd = os.open(fifo, os.O_RDWR)  # O_RDWR never blocks on a FIFO
        stop.wait(10)
        os.close(fd)

    thread = threading.Thread(target=hold, daemon=True)
    thread.start()
    try:
        yield fifo
    finally:
        stop.set()
        thread.join(5)


def test_a_fifo_with_a_silent_writer_is_skipped_too(vault: Path, fifo_writer: Path) -> None:
    engine = fresh(vault)
    assert engine.skipped == {"held.md": "not a regular file (named pipe)"}


@pytest.mark.parametrize("follow", [False, True])
def test_a_note_reached_through_a_folder_symlinked_out_of_the_vault_is_no_note(
    tmp_path: Path, follow: bool
) -> None:
    """The walk never descends a symlinked folder, followed or not: a path through one is
    not a note (it was skipped, or read from outside, and came back at every rescan)."""
    vault, outside = tmp_path / "vault", tmp_path / "pX"
    write(outside, "plan.md", "## p\nship it\n")
    vault.mkdir()
    (vault / "projects").symlink_to(outside, target_is_directory=True)
    with pytest.raises(FileNotFoundError):
        read_note(vault, "projects/plan.md", follow_external=follow)


def test_a_folder_that_cannot_be_read_is_reported_not_silently_left_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``chmod 000 wiki/`` (simulated where os.walk meets it: the tests may run as root)."""
    write(tmp_path, "diary/2026-01-01.md", "# 2026-01-01\n\n## 08:00\n\ntea\n")
    write(tmp_path, "wiki/people.md", "## Ann\n\nsails\n")
    real = os.scandir

    def scandir(path: object = ".") -> object:
        if str(path).endswith("wiki"):
            raise PermissionError(13, "Permission denied", str(path))
        return real(path)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "scandir", scandir)
    engine = Engine(load_config(tmp_path))
    engine.scan()
    assert list(engine.files) == ["diary/2026-01-01.md"]
    assert engine.linked_dirs == {
        "wiki": "folder not readable (Permission denied); its notes are not indexed"
    }


def test_notes_below_names_the_folders_it_cannot_list(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path, "wiki/ok/people.md", "## Ann\n\nsails\n")
    write(tmp_path, "wiki/locked/plan.md", "## p\n\nship\n")
    real = os.scandir

    def scandir(path: object = ".") -> object:
        if str(path).endswith("locked"):
            raise PermissionError(13, "Permission denied", str(path))
        return real(path)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "scandir", scandir)
    unreadable: dict[str, str] = {}
    assert notes_below(tmp_path, "wiki", NoteFilter(), unreadable) == ["wiki/ok/people.md"]
    assert notes_below(tmp_path, "wiki/locked", NoteFilter(), unreadable) == []
    why = "folder not readable (Permission denied); its notes are not indexed"
    assert unreadable == {"wiki/locked": why}


def test_notes_below_names_the_folders_symlinked_out_of_the_vault_as_the_walk_does(
    vault: Path, outside: Path
) -> None:
    (vault / "wiki" / "ext").symlink_to(outside.parent, target_is_directory=True)
    (vault / "wiki" / "inner").symlink_to(vault / "wiki", target_is_directory=True)
    (vault / "wiki" / "up").symlink_to(vault, target_is_directory=True)  # out of wiki only
    linked: dict[str, str] = {}
    assert notes_below(vault, "wiki", NoteFilter(), linked) == ["wiki/people.md"]
    walked: dict[str, str] = {}
    list(iter_notes(vault, NoteFilter(), walked))
    assert linked == walked and list(linked) == ["wiki/ext"]
    assert linked_out(vault, "wiki/ext") == linked["wiki/ext"]  # the folder itself
    assert linked_out(vault, "wiki/inner") is None and linked_out(vault, "wiki/up") is None
    assert linked_out(vault, "wiki") is None


def test_a_folder_made_unreadable_drops_its_notes_as_a_fresh_scan_leaves_them_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``chmod 000 wiki/`` after the notes were indexed: a rescan (``reindex``, the safety
    rescan) re-reads the notes it knew, and must not keep them as skipped "permission
    denied" where a fresh scan does not list them at all (simulated: tests may run as root)."""
    write(tmp_path, "diary/2026-01-01.md", "# 2026-01-01\n\n## 08:00\n\ntea\n")
    write(tmp_path, "wiki/people.md", "## Ann\n\nsails\n")
    engine = Engine(load_config(tmp_path))
    engine.scan()
    wiki = str(tmp_path / "wiki")
    real_scandir, real_stat = os.scandir, os.stat

    def denied(path: object) -> bool:
        return str(path) == wiki or str(path).startswith(wiki + os.sep)

    def scandir(path: object = ".") -> object:
        if denied(path):
            raise PermissionError(13, "Permission denied", str(path))
        return real_scandir(path)  # type: ignore[arg-type]

    def stat(path: object, *args: object, **kwargs: object) -> os.stat_result:
        if denied(path) and str(path) != wiki:
            raise PermissionError(13, "Permission denied", str(path))
        return real_stat(path, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "scandir", scandir)
    monkeypatch.setattr(os, "stat", stat)
    engine.scan()
    assert engine.skipped == fresh(tmp_path).skipped == {}
    assert list(engine.files) == ["diary/2026-01-01.md"]
    with pytest.raises(FileNotFoundError):
        read_note(tmp_path, "wiki/people.md")


def test_a_double_star_glob_matches_whole_folder_names_not_their_ends() -> None:
    """``**/drafts/*`` became ``*drafts/*``, so it also left out ``book-drafts/`` and
    ``**/README.md`` left out ``NOT_README.md``; a query's ``paths`` read the same globs."""
    from wikimem_watch.core.vault import glob_match

    notes = NoteFilter(exclude=("**/drafts/*", "**/README.md", "wiki/**/old/**"))
    left_out = [
        "drafts/a.md",
        "wiki/drafts/a.md",
        "a/b/drafts/c/d.md",
        "README.md",
        "wiki/README.md",
        "wiki/old/x.md",
        "wiki/a/b/old/x.md",
    ]
    kept = ["book-drafts/a.md", "wiki/olddrafts/x.md", "wiki/NOT_README.md", "wiki/bold/x.md"]
    assert [rel for rel in left_out + kept if notes.accepts(rel)] == kept
    assert NoteFilter(include=("**/*.md",)).accepts("a.md")
    assert NoteFilter(exclude=("templates/*", "archive/")).accepts("templates/x/y.md") is False
    assert glob_match("wiki/people.md", ["**/people.md"])
    assert not glob_match("wiki/xpeople.md", ["**/people.md"])
