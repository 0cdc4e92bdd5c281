"""Interleavings of the daemon's threads, each forced to happen: a write against the start
from the snapshot, a subscription against an apply, the journal against the daemon's own
writes."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from daemon_harness import Rpc, eventually, short_socket_path
from test_daemon_untrusted import running

from tests.conftest import held
from wikimem_watch.config import load_config
from wikimem_watch.core.engine import Engine
from wikimem_watch.core.parse import text_hash
from wikimem_watch.daemon import scans, vault_writer
from wikimem_watch.daemon.journal import Journal
from wikimem_watch.daemon.service import Daemon
from wikimem_watch.daemon.subscriptions import PER_CONNECTION_MAX, ChangeFeed
from wikimem_watch.daemon.watcher import ChangeSet
from wikimem_watch.errors import BadRequest, WatchError


def call(daemon: Daemon, method: str, params: dict[str, object]) -> dict[str, Any]:
    rpc = Rpc(daemon.socket_path)
    try:
        return rpc.call(method, params)
    finally:
        rpc.close()


@pytest.mark.timeout(60)
def test_a_write_during_the_start_from_the_snapshot_waits_for_the_restore(
    vault: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = load_config(vault, {"snapshot_dir": str(tmp_path / "snap")})
    first = Daemon(config, socket_path=short_socket_path(), force_polling=True)
    with running(first):
        eventually(lambda: first.status()["state"] == "ready", "the first start is ready")
    assert first.status()["snapshot"]["saved_at"] is not None  # the stop wrote it

    restoring, release = held(monkeypatch, scans, "restore_engine")
    daemon = Daemon(config, socket_path=short_socket_path(), force_polling=True)
    replies: list[dict[str, Any]] = []
    with running(daemon, release):
        assert restoring.wait(10)
        params = {"text": "an early kumquat", "date": "2026-07-21", "time": "10:00"}
        writer = threading.Thread(
            target=lambda: replies.append(call(daemon, "append_diary", params))
        )
        writer.start()
        writer.join(0.5)
        assert writer.is_alive(), "the write went in before the engine was restored"
        release.set()
        writer.join(10)
        assert replies and "result" in replies[0]
        eventually(lambda: daemon.status()["state"] == "ready", "ready after the restore")
        status = daemon.status()
        assert status["snapshot"]["loaded"] is True
        assert status["entries"]["total"] == 3  # the two the vault had, and the write
        for q, path in (("kumquat", "diary/2026-07-21.md"), ("sailing", "wiki/people.md")):
            hits = call(daemon, "query", {"q": q})["result"]["hits"]
            assert [h["path"] for h in hits] == [path]


@pytest.mark.timeout(30)
def test_the_daemons_own_write_is_known_as_its_own_while_it_is_recorded(
    vault: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The watcher may read a file between the write that replaced it and the write path
    recording its hash: asked then, ``is_own`` waits for the record instead of answering no
    (which journaled the daemon's own write as a person's edit)."""
    written, release = threading.Event(), threading.Event()
    real_replace = vault_writer.writes.replace

    def paused_replace(*args: Any) -> str:
        text = real_replace(*args)
        written.set()  # the new bytes are on disk; their hash is not recorded yet
        release.wait(10)
        return text

    monkeypatch.setattr(vault_writer.writes, "replace", paused_replace)
    writer = vault_writer.VaultWriter(vault)
    upsert = threading.Thread(target=writer.upsert_wiki, args=("people", "Ann", "likes kites"))
    upsert.start()
    try:
        assert written.wait(10)
        digest = text_hash((vault / "wiki" / "people.md").read_text(encoding="utf-8"))
        answers: list[bool] = []
        asking = threading.Thread(
            target=lambda: answers.append(writer.is_own("wiki/people.md", digest))
        )
        asking.start()
        asking.join(0.3)
        assert asking.is_alive() and not answers, "answered before the write was recorded"
        release.set()
        asking.join(10)
        assert answers == [True]
    finally:
        release.set()
        upsert.join(10)


def test_a_save_a_write_was_built_on_is_journaled_before_the_write(vault: Path) -> None:
    """A person's save that the index has not applied yet is read by the write, and applying
    the write applies both: the save gets its own journal line, first."""
    people = vault / "wiki" / "people.md"
    indexed = {"wiki/people.md": text_hash(people.read_text(encoding="utf-8"))}
    journal = Journal(vault)
    writer = vault_writer.VaultWriter(vault, journal=journal, indexed_hash=indexed.get)
    writer.upsert_wiki("people", "Carl", "likes quinces")  # nothing unapplied: one line
    indexed["wiki/people.md"] = text_hash(people.read_text(encoding="utf-8"))
    with people.open("a", encoding="utf-8") as fh:
        fh.write("\n## Bob\nBob keeps bees.\n")  # saved by hand; the index has not seen it
    writer.upsert_wiki("people", "Dora", "likes dates")
    lines = [json.loads(x) for x in journal.path.read_text(encoding="utf-8").splitlines()]
    assert [(x["action"], x.get("item") or x.get("path"), x.get("by")) for x in lines] == [
        ("add", "Carl", None),
        ("edit", "wiki/people.md", "external"),
        ("add", "Dora", None),
    ]


class FakePeer:
    """A connection as a subscription sees it, over a socket pair the test reads."""

    def __init__(self) -> None:
        self.sock, self.other = socket.socketpair()
        self.send_lock = threading.Lock()
        self.idle_exempt = False
        self.on_close: list[Callable[[], None]] = []
        self.after_reply: list[Callable[[], None]] = []

    def replied(self) -> None:
        """The reply to the request is sent (what the server does next)."""
        started, self.after_reply = self.after_reply, []
        for callback in started:
            callback()

    def close(self) -> None:
        for callback in self.on_close:  # as the server does: ends its subscriptions
            callback()
        self.sock.close()
        self.other.close()

    def notifications(self, count: int) -> list[dict[str, Any]]:
        reader = self.other.makefile("rb")
        self.other.settimeout(10)
        return [json.loads(reader.readline())["params"] for _ in range(count)]


@pytest.fixture
def peers() -> Iterator[Callable[[], FakePeer]]:
    made: list[FakePeer] = []

    def make() -> FakePeer:
        made.append(FakePeer())
        return made[-1]

    try:
        yield make
    finally:
        for peer in made:
            peer.close()


def feed_over(vault: Path, **kwargs: Any) -> ChangeFeed:
    engine = Engine(load_config(vault))
    engine.scan()
    return ChangeFeed(engine, **kwargs)


def edit(vault: Path, text: str) -> str:
    day = vault / "diary" / "2026-07-20.md"
    day.write_text(day.read_text(encoding="utf-8") + f"\n## {text}\n{text} entry\n", "utf-8")
    return "diary/2026-07-20.md"


@pytest.mark.timeout(30)
def test_a_subscription_asked_for_during_an_apply_starts_after_it(
    vault: Path, monkeypatch: pytest.MonkeyPatch, peers: Callable[[], FakePeer]
) -> None:
    feed = feed_over(vault)
    applying, release = held(monkeypatch, feed.engine, "apply")
    applier = threading.Thread(target=feed.apply, args=([edit(vault, "09:00")],))
    applier.start()
    assert applying.wait(10)
    peer, made = peers(), []
    asking = threading.Thread(target=lambda: made.append(feed.subscribe(peer, (), (), None)))
    asking.start()
    asking.join(0.3)
    assert asking.is_alive(), "subscribed in the middle of an apply"
    release.set()
    applier.join(10)
    asking.join(10)
    ((sub_id, generation),) = made
    peer.replied()
    assert generation == feed.engine.generation  # the apply is behind it, not notified
    feed.apply([edit(vault, "10:00")])
    (note,) = peer.notifications(1)
    assert note["subscription"] == sub_id and note["generation"] > generation
    assert note["added"] == ["diary/2026-07-20.md#10:00"]


@pytest.mark.timeout(30)
def test_notifications_leave_in_the_order_the_changes_were_applied(
    vault: Path, monkeypatch: pytest.MonkeyPatch, peers: Callable[[], FakePeer]
) -> None:
    feed = feed_over(vault)
    peer = peers()
    feed.subscribe(peer, (), (), None)
    peer.replied()
    publishing, release = threading.Event(), threading.Event()
    real_publish = feed._publish

    def slow_first(*args: Any) -> None:
        if not publishing.is_set():
            publishing.set()
            release.wait(10)  # the first applier, between its apply and its notification
        real_publish(*args)

    monkeypatch.setattr(feed, "_publish", slow_first)
    first = threading.Thread(target=feed.apply, args=([edit(vault, "09:00")],))
    first.start()
    assert publishing.wait(10)
    second = threading.Thread(target=feed.apply, args=([edit(vault, "10:00")],))
    second.start()
    second.join(0.3)
    assert second.is_alive(), "a second apply went ahead of the first one's notification"
    release.set()
    first.join(10)
    second.join(10)
    generations = [n["generation"] for n in peer.notifications(2)]
    assert generations == sorted(generations) and generations[0] < generations[1]


def test_subscriptions_are_capped_per_connection_and_in_connections(
    vault: Path, peers: Callable[[], FakePeer]
) -> None:
    feed = feed_over(vault, max_connections=4)
    one = peers()
    for _ in range(PER_CONNECTION_MAX):
        feed.subscribe(one, (), (), None)
    with pytest.raises(BadRequest, match="at most 16 subscriptions"):
        feed.subscribe(one, (), (), None)
    feed.subscribe(peers(), (), (), None)  # a second connection: half of 4
    with pytest.raises(WatchError, match="half of max_connections"):
        feed.subscribe(peers(), (), (), None)
    assert feed.count() == PER_CONNECTION_MAX + 1


def test_unsubscribing_leaves_nothing_behind_on_a_long_lived_connection(
    vault: Path, peers: Callable[[], FakePeer]
) -> None:
    """Each subscribe left a close callback (holding its subscription and queue) on the
    connection for good: one that subscribes and unsubscribes in a loop grew without bound."""
    feed = feed_over(vault)
    peer = peers()
    senders = sum(t.name == "notify" for t in threading.enumerate())
    for _ in range(50):
        sub_id, _ = feed.subscribe(peer, (), (), None)
        peer.replied()
        assert feed.unsubscribe(peer, sub_id)
    assert peer.on_close == [] and peer.after_reply == []
    ended = lambda: sum(t.name == "notify" for t in threading.enumerate()) <= senders  # noqa: E731
    eventually(ended, "every sender thread ended")


@pytest.mark.timeout(30)
def test_no_notification_goes_out_before_the_reply_to_subscribe(
    vault: Path, peers: Callable[[], FakePeer]
) -> None:
    feed = feed_over(vault)
    peer = peers()
    sub_id, _ = feed.subscribe(peer, (), (), None)
    feed.apply([edit(vault, "09:00")])  # a change lands before the reply is sent
    peer.other.settimeout(0.3)
    with pytest.raises(TimeoutError):
        peer.other.recv(1)
    peer.replied()
    (note,) = peer.notifications(1)
    assert note["subscription"] == sub_id


@pytest.mark.timeout(30)
def test_a_notes_symlink_changes_with_it_in_notifications_not_in_the_journal(
    vault: Path, peers: Callable[[], FakePeer]
) -> None:
    people = vault / "wiki" / "people.md"
    people.write_text("# People\n\n## Ann\nlikes tea\n\n## Bob\nlikes coffee\n", "utf-8")
    (vault / "alias.md").symlink_to("wiki/people.md")
    journal = Journal(vault)
    feed = feed_over(vault, journal=journal)
    peer = peers()
    feed.subscribe(peer, (), (), None)
    peer.replied()
    people.write_text("# People\n\n## Ann\nlikes green tea\n", "utf-8")  # Bob deleted
    feed.apply(["wiki/people.md"], external=True)
    (note,) = peer.notifications(1)
    assert (note["added"], sorted(note["updated"]), sorted(note["removed"])) == (
        [],
        ["alias.md#Ann", "wiki/people.md#Ann"],
        ["alias.md#Bob", "wiki/people.md#Bob"],
    )
    lines = [json.loads(x) for x in journal.path.read_text(encoding="utf-8").splitlines()]
    assert [(x["action"], x["path"]) for x in lines] == [("edit", "wiki/people.md")]


def test_vectors_wait_for_the_first_scan_to_end(
    vault: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A sync over a part of the vault would take the vectors of the notes not read yet for
    dead rows and rewrite them away (paid again at the next start): writes during the first
    scan leave the vectors to the scan's own sync at its end, and `embed` waits for ready."""
    daemon = Daemon(load_config(vault), socket_path=short_socket_path(), force_polling=True)
    synced: list[int] = []
    monkeypatch.setattr(daemon.engine, "sync_vectors", lambda **kw: synced.append(1))
    daemon._restored.set()
    note = vault / "wiki" / "people.md"
    note.write_text(note.read_text(encoding="utf-8") + "\n## Bo\nBo rows.\n", encoding="utf-8")
    assert daemon.state == "scanning"
    daemon._applied("wiki/people.md")
    assert synced == []
    with pytest.raises(WatchError, match="still reading the vault"):
        daemon.embed(rebuild=False)
    daemon.state = "ready"
    note.write_text(note.read_text(encoding="utf-8") + "\n## Cy\nCy rows.\n", encoding="utf-8")
    daemon._applied("wiki/people.md")
    assert synced == [1]


def test_changes_found_by_a_rescan_for_lost_events_are_journaled(vault: Path) -> None:
    """A burst too big for the watcher (a git checkout, a kernel queue overflow) turns into a
    full rescan: its changes were applied, but none had a journal line."""
    daemon = Daemon(load_config(vault), socket_path=short_socket_path(), force_polling=True)
    daemon._restored.set()
    daemon._scan_chunked()
    (vault / "wiki" / "people.md").write_text("## Ann\nAnn sails.\n", encoding="utf-8")
    (vault / "wiki" / "boats.md").write_text("## Heron\na dinghy\n", encoding="utf-8")
    daemon._apply_changes(ChangeSet(rescan=True))
    lines = [json.loads(x) for x in daemon.journal.path.read_text(encoding="utf-8").splitlines()]
    assert [(x["action"], x["path"]) for x in lines] == [
        ("create", "wiki/boats.md"),
        ("edit", "wiki/people.md"),
    ]


def test_changes_found_by_a_reindex_are_journaled(vault: Path) -> None:
    """``reindex`` applies the changes the watcher missed, as the safety rescan does, but
    only the safety rescan journaled them."""
    from wikimem_watch.daemon.service import _Job

    daemon = Daemon(load_config(vault), socket_path=short_socket_path(), force_polling=True)
    daemon._restored.set()
    daemon._scan_chunked()
    (vault / "wiki" / "people.md").unlink()
    daemon._run_job(job := _Job("reindex"))
    assert job.result["removed"] == 1
    lines = [json.loads(x) for x in daemon.journal.path.read_text(encoding="utf-8").splitlines()]
    assert [(x["action"], x["path"]) for x in lines] == [("delete", "wiki/people.md")]


def test_a_folder_of_more_notes_than_a_chunk_renamed_is_journaled_as_moves(vault: Path) -> None:
    """A burst is applied CHUNK_FILES paths at a time, in path order: a renamed folder's new
    paths filled the first chunks and its old ones the last, and each chunk paired moves
    alone, so the rename was journaled as creates and deletes, no move at all."""
    count = scans.CHUNK_FILES + 6
    (vault / "projects").mkdir()
    for n in range(count):
        (vault / "projects" / f"p{n:03d}.md").write_text(f"## plan\nstep {n}\n", "utf-8")
    daemon = Daemon(load_config(vault), socket_path=short_socket_path(), force_polling=True)
    daemon._restored.set()
    daemon._scan_chunked()
    (vault / "projects").rename(vault / "archive")
    daemon._apply_changes(ChangeSet(dirs=frozenset({"projects", "archive"})))
    lines = [json.loads(x) for x in daemon.journal.path.read_text(encoding="utf-8").splitlines()]
    moves = sorted((x["action"], x.get("from"), x["path"]) for x in lines)
    assert moves == [
        ("move", f"projects/p{n:03d}.md", f"archive/p{n:03d}.md") for n in range(count)
    ]


def test_a_note_reported_as_a_moved_folder_is_read_as_a_note(vault: Path) -> None:
    """A polling observer pairs a deleted folder and a new note by their inode and reports
    the folder moved onto the note: the note must be read all the same."""
    daemon = Daemon(load_config(vault), socket_path=short_socket_path(), force_polling=True)
    (vault / "new.md").write_text("## n\nx\n", encoding="utf-8")
    assert "new.md" in daemon._under("new.md")
    assert "wiki/people.md" in daemon._under("wiki")  # a folder: the notes below it


def journal_lines(journal: Journal) -> list[tuple[str, str, str | None]]:
    lines = [json.loads(x) for x in journal.path.read_text(encoding="utf-8").splitlines()]
    return [(x["action"], x["path"], x.get("from")) for x in lines]


@pytest.mark.timeout(30)
def test_a_note_made_unreadable_is_notified_as_removed_and_journaled(
    vault: Path, peers: Callable[[], FakePeer]
) -> None:
    """A note the index drops for being binary (or too big, or unreadable) lost its entries
    with the generation bumped, but subscribers heard nothing and the journal had no line."""
    (vault / "alias.md").symlink_to("wiki/people.md")  # dropped with it: the note's line
    journal = Journal(vault)
    feed = feed_over(vault, journal=journal)
    peer = peers()
    feed.subscribe(peer, (), (), None)
    peer.replied()
    (vault / "wiki" / "people.md").write_bytes(b"# People\n\n## Ann\nAnn \x00 sails.\n")
    assert sorted(feed.apply(["wiki/people.md"], external=True).skipped) == [
        "alias.md",
        "wiki/people.md",
    ]
    feed.apply([edit(vault, "09:00")])  # a later change: what is heard first is the drop
    note = peer.notifications(1)[0]
    assert (note["added"], note["updated"]) == ([], [])
    assert sorted(note["removed"]) == ["alias.md#Ann", "wiki/people.md#Ann"]
    assert journal_lines(journal) == [("edit", "wiki/people.md", None)]


def test_a_note_read_again_after_it_was_skipped_is_journaled_as_an_edit(vault: Path) -> None:
    """A note the index skipped (binary, too big) that is read again was there all along:
    it was journaled as created."""
    people = vault / "wiki" / "people.md"
    text = people.read_bytes()
    people.write_bytes(text + b"\x00")
    journal = Journal(vault)
    feed = feed_over(vault, journal=journal)
    assert "wiki/people.md" in feed.engine.skipped
    people.write_bytes(text)
    feed.apply(["wiki/people.md"], external=True)
    assert journal_lines(journal) == [("edit", "wiki/people.md", None)]


@pytest.mark.timeout(30)
def test_a_change_of_a_notes_tags_is_notified_as_updated_and_heard_by_q(
    vault: Path, peers: Callable[[], FakePeer]
) -> None:
    """An entry whose front-matter tags (or title) changed is indexed anew and matches new
    words, but only a change of its heading or text was called an update: nothing was
    notified, and a subscription whose ``q`` is the new tag missed it."""
    people = vault / "wiki" / "people.md"
    people.write_text("---\ntags: [friends]\n---\n## Ann\nAnn likes sailing.\n", "utf-8")
    feed = feed_over(vault)
    everything, tagged = peers(), peers()
    feed.subscribe(everything, (), (), None)
    feed.subscribe(tagged, (), (), "lighthouse")
    everything.replied()
    tagged.replied()
    people.write_text(
        "---\ntags: [friends, lighthouse]\n---\n## Ann\nAnn likes sailing.\n", "utf-8"
    )
    feed.apply(["wiki/people.md"], external=True)
    feed.apply([edit(vault, "lighthouse")])  # a later change, heard by both
    day = vault / "diary" / "2026-07-20.md"  # a line moved, nothing else: not an update
    day.write_text("\n" + day.read_text(encoding="utf-8"), "utf-8")
    feed.apply(["diary/2026-07-20.md"])
    feed.apply([edit(vault, "11:00")])
    heard = [(n["added"], n["updated"]) for n in everything.notifications(3)]
    assert heard == [
        ([], ["wiki/people.md#Ann"]),
        (["diary/2026-07-20.md#lighthouse"], []),
        (["diary/2026-07-20.md#11:00"], []),
    ]
    note = tagged.notifications(1)[0]
    assert (note["added"], note["updated"]) == ([], ["wiki/people.md#Ann"])


def test_two_notes_of_one_text_moved_together_are_journaled_as_two_moves(vault: Path) -> None:
    """Moves are paired by text hash: of two notes with the same text (two stubs in a folder
    moved at once) only one was kept, so one move named the wrong source and the other note
    read as created, and the first note's removal had no line at all."""
    (vault / "drafts").mkdir()
    for name in ("one", "two"):
        (vault / "drafts" / f"{name}.md").write_text("## todo\nfill in\n", "utf-8")
    journal = Journal(vault)
    feed = feed_over(vault, journal=journal)
    (vault / "drafts").rename(vault / "done")
    (vault / "archive").mkdir()
    (vault / "done" / "two.md").rename(vault / "archive" / "two.md")
    paths = ["archive/two.md", "done/one.md", "drafts/one.md", "drafts/two.md"]
    feed.apply(paths, external=True)
    assert journal_lines(journal) == [  # of one text: each paired with its own name
        ("move", "archive/two.md", "drafts/two.md"),
        ("move", "done/one.md", "drafts/one.md"),
    ]


def test_a_note_moved_with_a_symlink_to_it_is_journaled_as_its_move(vault: Path) -> None:
    """The note and its symlink (now dangling) share the text hash: the symlink was taken
    for the note moved, and the note's removal was never journaled."""
    (vault / "alias.md").symlink_to("wiki/people.md")
    journal = Journal(vault)
    feed = feed_over(vault, journal=journal)
    (vault / "wiki" / "people.md").rename(vault / "wiki" / "folk.md")
    feed.apply(["wiki/folk.md", "wiki/people.md"], external=True)
    assert journal_lines(journal) == [
        ("move", "wiki/folk.md", "wiki/people.md"),
        ("delete", "alias.md", None),
    ]


def test_a_persons_undo_back_to_a_state_we_wrote_is_journaled(vault: Path) -> None:
    """Every state our writes left counted as ours for good: a person who edited our item
    and then undid the edit (the file back to our bytes) changed the index, but the undo
    had no journal line, so the journal's last word on the file was the edit."""
    journal = Journal(vault)
    engine = Engine(load_config(vault))
    engine.scan()
    feed: list[ChangeFeed] = []

    def applied(rel: str) -> int:
        feed[0].apply([rel])
        return engine.generation

    writer = vault_writer.VaultWriter(vault, journal=journal, on_written=applied)
    feed.append(
        ChangeFeed(
            engine,
            journal,
            writer.is_own,
            own_mark=writer.own_mark,
            not_own_before=writer.not_own_before,
        )
    )
    writer.upsert_wiki("people", "Ann", "likes tea")
    note = vault / "wiki" / "people.md"
    ours = note.read_text(encoding="utf-8")
    note.write_text(ours.replace("likes tea", "likes coffee"), encoding="utf-8")
    feed[0].apply(["wiki/people.md"], external=True)
    note.write_text(ours, encoding="utf-8")  # the person's undo
    feed[0].apply(["wiki/people.md"], external=True)
    lines = [json.loads(x) for x in journal.path.read_text(encoding="utf-8").splitlines()]
    assert [(x["action"], x.get("path")) for x in lines] == [
        ("update", None),
        ("edit", "wiki/people.md"),
        ("edit", "wiki/people.md"),
    ]
    # A write recorded after a save was read stays ours: the save came before it.
    mark = writer.own_mark()
    writer.upsert_wiki("people", "Ann", "likes kites")
    writer.not_own_before("wiki/people.md", mark)
    assert writer.is_own("wiki/people.md", text_hash(note.read_text(encoding="utf-8")))
