"""Writes through a real daemon, raced by real processes (ADR-0016)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest
from daemon_harness import ROOT, DaemonProc, Rpc, child_env, eventually, wikimem

RACERS = ROOT / "bench" / "race_writers.py"
DAY = "2026-07-21"


pytestmark = pytest.mark.timeout(60)  # real daemons and processes; slow on a busy machine


def _racer(*args: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, str(RACERS), *args], env=child_env(), cwd=ROOT)


def _reap(procs: list[subprocess.Popen[bytes]]) -> None:
    """Kill and wait for any writer still running (a failed or timed-out test)."""
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
        proc.wait(10)


def run_race(daemon: DaemonProc, vault: Path, agents: int = 4, each: int = 50) -> Counter[str]:
    """Four agents × 50 ``append_diary`` over the socket and a fifth process appending 30
    entries by hand (``open(O_APPEND)/write/close``) on one day file; returns how often each
    written text occurs in the file once everything is quiet.

    An editor-style save (temp file and rename) beside them is measured by
    ``bench/write_race.py --hand-mode mixed``, not asserted here: such a save can overwrite a
    write made a moment before, which no daemon can prevent (ADR-0016)."""
    day_file = vault / "diary" / f"{DAY}.md"
    day_file.write_text(f"# {DAY}\n\n## 12:00\nnoon by hand\n", encoding="utf-8")
    eventually(lambda: bool(daemon.result("day", {"date": DAY})["entries"]), "the day is indexed")
    procs = [
        _racer("agent", str(daemon.sock), DAY, str(each), f"w{n}", str(n)) for n in range(agents)
    ]
    procs.append(_racer("hand", str(day_file), "30", "hand", "99", "append"))
    try:
        codes = [proc.wait(60) for proc in procs]
    finally:
        _reap(procs)
    assert codes == [0] * len(procs)
    expected = {f"w{n}-{i}" for n in range(agents) for i in range(each)}
    expected |= {f"hand-{i}" for i in range(30)}

    def counts() -> Counter[str]:
        text = day_file.read_text(encoding="utf-8")
        return Counter(re.findall(r"\b((?:w\d|hand)-\d+) (?:wrote|typed) this", text))

    try:
        eventually(lambda: set(counts()) >= expected, "every entry is in the day file")
    except AssertionError:
        raise AssertionError(f"missing: {sorted(expected - set(counts()))}") from None
    eventually(lambda: daemon.result("status")["pending"] == 0, "the daemon is quiet")
    return counts()


def test_four_agents_and_a_hand_appender_lose_and_duplicate_nothing(
    vault: Path, daemon: DaemonProc
) -> None:
    found = run_race(daemon, vault)
    assert len(found) == 4 * 50 + 30
    assert set(found.values()) == {1}, [k for k, v in found.items() if v != 1]
    check = wikimem("check", "--socket", str(daemon.sock), "--vault", str(vault))
    assert check.returncode == 0, check.stdout + check.stderr
    day = daemon.result("day", {"date": DAY})["entries"]
    times = [e["time"] for e in day if e["owner"] and e["owner"].startswith("w")]
    assert len(times) == 200


def test_a_write_is_searchable_when_the_call_returns(daemon: DaemonProc) -> None:
    rpc = daemon.rpc()
    try:
        reply = rpc.result("append_diary", {"text": "zanzibar ferry", "date": DAY, "time": "07:30"})
        hits = rpc.result("query", {"q": "zanzibar"})["hits"]
        assert [h["id"] for h in hits] == [reply["id"]] == [f"diary/{DAY}.md#07:30"]
        assert rpc.result("status")["generation"] >= reply["generation"]
    finally:
        rpc.close()


def test_upsert_while_another_process_rewrites_the_file_keeps_both(
    vault: Path, daemon: DaemonProc
) -> None:
    note = vault / "wiki" / "mixed.md"
    note.write_text("# mixed\n\n## counter\n0\n", encoding="utf-8")
    script = (
        "import os, sys, re, time\n"
        "from pathlib import Path\n"
        "p = Path(sys.argv[1])\n"
        "for i in range(1, 151):\n"
        "    while True:\n"
        "        old = p.read_text()\n"
        "        new = re.sub(r'## counter\\n\\d+', f'## counter\\n{i}', old)\n"
        "        tmp = p.with_name('.mixed.tmp')\n"
        "        tmp.write_text(new)\n"
        "        if p.read_text() == old:\n"
        "            os.rename(tmp, p)\n"
        "            break\n"
        "    time.sleep(0.005)\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", script, str(note)], env=child_env())
    rpc = daemon.rpc()
    try:
        for i in range(40):
            rpc.result("upsert_wiki", {"file": "mixed", "name": f"item {i % 8}", "text": f"v{i}"})
        assert proc.wait(60) == 0
    finally:
        rpc.close()
        _reap([proc])

    def settled() -> bool:
        # The rewriter's saves are never overwritten (compare-and-swap). Ours survive its
        # blind saves through up to MAX_REAPPLY re-applies each; past that (a loaded machine)
        # its save stands, and the daemon must have said so: never a silent loss.
        text, log = note.read_text(encoding="utf-8"), daemon.output()
        ours = all(
            f"## item {n}\n\nv{32 + n}\n" in text or f"item 'item {n}'" in log for n in range(8)
        )
        return ours and "## counter\n150\n" in text

    eventually(settled, "the rewriter's last counter and our last upserts are both there")


def test_a_subscriber_hears_of_a_hand_edit_and_of_an_append(
    vault: Path, daemon: DaemonProc
) -> None:
    sub = Rpc(daemon.sock)
    try:
        sub_id = sub.result("subscribe", {})["subscription"]
        (vault / "wiki" / "places.md").write_text("## harbour\nboats\n", encoding="utf-8")
        first = json.loads(sub.reader.readline())
        assert first["method"] == "changed"
        assert first["params"]["subscription"] == sub_id
        assert first["params"]["added"] == ["wiki/places.md#harbour"]
        reply = daemon.result("append_diary", {"text": "kites", "date": DAY, "time": "10:00"})
        second = json.loads(sub.reader.readline())
        assert second["params"]["added"] == [reply["id"]]
        assert second["params"]["generation"] == reply["generation"]
    finally:
        sub.close()


def test_a_subscription_with_q_hears_only_matching_changes(daemon: DaemonProc) -> None:
    sub = Rpc(daemon.sock)
    try:
        sub.result("subscribe", {"q": "lighthouse"})
        daemon.result("append_diary", {"text": "groceries", "date": DAY, "time": "09:00"})
        reply = daemon.result("append_diary", {"text": "the lighthouse", "date": DAY})
        message = json.loads(sub.reader.readline())
        assert message["params"]["added"] == [reply["id"]]
    finally:
        sub.close()


def test_a_subscription_reads_dot_slash_paths_as_query_does(
    vault: Path, daemon: DaemonProc
) -> None:
    sub = Rpc(daemon.sock)
    try:
        sub.result("subscribe", {"paths": ["./wiki/"]})  # was kept as "./wiki/": heard nothing
        daemon.result("append_diary", {"text": "not in wiki", "date": DAY, "time": "09:00"})
        (vault / "wiki" / "birds.md").write_text("## heron\ngrey\n", encoding="utf-8")
        message = json.loads(sub.reader.readline())
        assert message["params"]["added"] == ["wiki/birds.md#heron"]
        everything = sub.result("subscribe", {"paths": ["."]})["subscription"]
        reply = daemon.result("append_diary", {"text": "heard", "date": DAY, "time": "10:00"})
        message = json.loads(sub.reader.readline())
        assert message["params"]["subscription"] == everything
        assert message["params"]["added"] == [reply["id"]]
        error = sub.call("subscribe", {"paths": ["../elsewhere"]})["error"]
        assert error["code"] == -32602 and "outside the vault" in error["message"]
    finally:
        sub.close()


def test_journal_has_both_tools_line_shapes_and_is_never_indexed(
    vault: Path, daemon: DaemonProc
) -> None:
    daemon.result("append_diary", {"text": "x", "date": DAY, "time": "08:00", "owner": "a"})
    daemon.result("upsert_wiki", {"file": "people", "name": "Bo", "text": "y", "source": "c1"})
    daemon.result("delete_wiki", {"file": "people", "name": "Bo"})
    daemon.result("upsert_wiki", {"file": "people", "name": "Cy", "text": "z"})
    daemon.result("delete_wiki", {"file": "people", "name": "Cy", "owner": "agent:b"})
    (vault / "wiki" / "hand.md").write_text("## made by hand\n", encoding="utf-8")
    eventually(
        lambda: any(e.get("by") == "external" for e in daemon.result("journal")["entries"]),
        "the hand edit is journaled",
    )
    lines = daemon.result("journal", {"limit": 10})["entries"]
    shapes = [{k for k in e if k != "ts"} for e in lines]
    assert shapes == [
        {"action", "date", "time", "owner"},
        {"action", "file", "item", "source_conv"},
        {"action", "file", "item"},
        {"action", "file", "item"},
        {"action", "file", "item", "owner"},  # a removal says who asked for it, when told
        {"action", "path", "by"},
    ]
    assert [e["action"] for e in lines] == ["diary", "add", "remove", "add", "remove", "create"]
    assert lines[4]["owner"] == "agent:b" and lines[5]["path"] == "wiki/hand.md"
    paths = {f["path"] for f in daemon.result("status")["skipped"]}
    assert "journal.jsonl" not in paths
    assert "journal.jsonl" not in daemon.result("file_digests")["files"]


def test_bad_writes_are_refused_and_write_nothing(vault: Path, daemon: DaemonProc) -> None:
    before = sorted(str(p) for p in vault.rglob("*"))
    rpc = daemon.rpc()
    try:
        for method, params in [
            ("append_diary", {"text": "  "}),
            ("append_diary", {"text": "x", "date": "2026-13-01"}),
            ("append_diary", {"text": "x", "time": "7pm"}),
            ("upsert_wiki", {"file": "../etc", "name": "a", "text": "b"}),
            ("upsert_wiki", {"file": "Bad Name", "name": "a", "text": "b"}),
            ("upsert_wiki", {"file": "ok", "name": "a:b", "text": "b"}),
            ("delete_wiki", {"file": "nosuch", "name": "a"}),
            ("append_diary", {"text": "bytes \udcff of no text"}),  # a lone surrogate
            ("upsert_wiki", {"file": "ok", "name": "a\ud800", "text": "b"}),
            # the year 10000 in Shanghai: refused, not an internal error
            ("append_diary", {"text": "x", "ts": "9999-12-31T23:59+00:00", "tz": "Asia/Shanghai"}),
        ]:
            reply = rpc.call(method, params)
            assert "error" in reply, (method, params, reply)
            assert reply["error"]["code"] in (-32602, -32004)
    finally:
        rpc.close()
    assert sorted(str(p) for p in vault.rglob("*")) == before


def test_a_symlinked_directory_or_planted_fifo_never_takes_a_write_outside(
    vault: Path, tmp_path: Path, start_daemon: Callable[..., DaemonProc]
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    shutil.rmtree(vault / "wiki")
    (vault / "wiki").symlink_to(outside)
    os.mkfifo(vault / "journal.jsonl")
    daemon = start_daemon(vault)
    rpc = daemon.rpc()
    try:
        reply = rpc.call("upsert_wiki", {"file": "x", "name": "a", "text": "b"})
    finally:
        rpc.close()
    assert "error" in reply and "symlink" in reply["error"]["message"]
    assert list(outside.iterdir()) == []
    ok = daemon.result("append_diary", {"text": "still writes", "date": DAY})
    assert ok["path"] == f"diary/{DAY}.md"  # the FIFO journal neither blocked nor broke it


def _read_like_wikimem(path: Path) -> list[dict[str, str | None]]:
    """The wikimem library's documented reading of a day or wiki file, written out here
    independently of our parser: each ``## heading`` starts an item; a line that is a whole
    ``<!-- wikimem: k=v | ... -->`` comment is its metadata; the other lines, stripped, are
    its content; lines before the first heading belong to no item."""
    items: list[dict[str, str | None]] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        heading = re.match(r"^##\s+(.+?)\s*$", line)
        if heading:
            items.append({"heading": heading.group(1), "body": "", "owner": None, "source": None})
            continue
        if not items:
            continue
        meta = re.match(r"^<!--\s*wikimem:\s*(.*?)\s*-->\s*$", line.strip())
        if meta:
            fields = dict(p.strip().partition("=")[::2] for p in meta.group(1).split("|"))
            items[-1]["owner"], items[-1]["source"] = fields.get("owner"), fields.get("source")
            continue
        items[-1]["body"] = f"{items[-1]['body']}\n{line}".strip()
    return items


def test_a_vault_written_through_the_daemon_reads_the_same_by_wikimem_rules(
    vault: Path, daemon: DaemonProc
) -> None:
    rpc = daemon.rpc()
    try:
        for hhmm, text in (("21:00", "late swim"), ("07:15", "early tea"), ("12:30", "lunch")):
            params = {"text": text, "date": DAY, "time": hhmm, "owner": "agent", "source": "c1"}
            rpc.result("append_diary", params)
        for name, text in (("Ann", "likes tea"), ("Bo", "likes swimming"), ("Ann", "likes coffee")):
            params = {"file": "friends", "name": name, "text": text, "owner": "agent"}
            rpc.result("upsert_wiki", params)
    finally:
        rpc.close()
    day = _read_like_wikimem(vault / "diary" / f"{DAY}.md")
    assert [(d["heading"], d["body"], d["owner"], d["source"]) for d in day] == [
        ("07:15", "early tea", "agent", "c1"),
        ("12:30", "lunch", "agent", "c1"),
        ("21:00", "late swim", "agent", "c1"),
    ]
    wiki = _read_like_wikimem(vault / "wiki" / "friends.md")
    assert [(w["heading"], w["body"], w["owner"]) for w in wiki] == [
        ("Ann", "likes coffee", "agent"),
        ("Bo", "likes swimming", "agent"),
    ]
    entries = {e["heading"]: e["text"] for e in daemon.result("day", {"date": DAY})["entries"]}
    assert entries == {"07:15": "early tea", "12:30": "lunch", "21:00": "late swim"}


def test_changes_made_while_the_daemon_was_down_are_journaled_at_the_next_start(
    vault: Path, start_daemon: Callable[..., DaemonProc]
) -> None:
    """A start from the index snapshot re-read the notes changed while no daemon ran and
    dropped the ones gone, with no journal line: a follower reading on from its cursor
    never learned of them."""
    (vault / "wiki" / "boats.md").write_text("## Heron\na dinghy\n", encoding="utf-8")
    first = start_daemon(vault)
    first.result("append_diary", {"text": "kites", "date": DAY, "time": "08:00"})
    cursor = first.result("journal")["cursor"]
    first.stop()

    (vault / "wiki" / "people.md").write_text("## Ann\nAnn rows now.\n", encoding="utf-8")
    (vault / "wiki" / "places.md").write_text("## Porto\nby the river\n", encoding="utf-8")
    (vault / "diary" / "2026-07-20.md").unlink()
    (vault / "wiki" / "boats.md").rename(vault / "wiki" / "dinghies.md")
    second = start_daemon(vault)
    assert second.result("status")["snapshot"]["loaded"] is True
    page = second.result("journal", {"since": cursor})
    assert page["reset"] is False
    assert sorted((e["action"], e["path"], e.get("from")) for e in page["entries"]) == [
        ("create", "wiki/places.md", None),
        ("delete", "diary/2026-07-20.md", None),
        ("edit", "wiki/people.md", None),
        ("move", "wiki/dinghies.md", "wiki/boats.md"),
    ]
    assert all(e["by"] == "external" for e in page["entries"])


def test_a_start_without_a_snapshot_journals_that_what_changed_is_unknown(
    vault: Path, start_daemon: Callable[..., DaemonProc]
) -> None:
    """With the snapshot gone (a deleted cache) the start cannot tell what changed while no
    daemon ran: one ``reset`` line says so, not silence, and not a create for every note.
    A first start in a vault with no journal makes none."""
    first = start_daemon(vault)
    snapshot = Path(first.result("status")["snapshot"]["path"])
    first.stop()
    assert not (vault / "journal.jsonl").exists()
    first = start_daemon(vault)  # from the snapshot, journaling a write
    first.result("append_diary", {"text": "kites", "date": DAY, "time": "08:00"})
    cursor = first.result("journal")["cursor"]
    first.stop()

    (vault / "wiki" / "people.md").write_text("## Ann\nAnn rows now.\n", encoding="utf-8")
    snapshot.unlink()
    second = start_daemon(vault)
    assert second.result("status")["snapshot"]["loaded"] is False
    page = second.result("journal", {"since": cursor})
    assert page["reset"] is False
    assert [(e["action"], e["path"], e["by"]) for e in page["entries"]] == [
        ("reset", ".", "external")
    ]


def test_changes_an_in_process_run_took_into_the_snapshot_are_journaled(
    vault: Path, start_daemon: Callable[..., DaemonProc]
) -> None:
    """With no daemon running, a command answered in-process (``query --vault``, an MCP
    server) rewrites the snapshot when many files changed, or when there was none: the next
    daemon started from it and never journaled what changed before."""
    from wikimem_watch.core.snapshot import REWRITE_MIN_FILES

    first = start_daemon(vault)
    first.result("append_diary", {"text": "kites", "date": DAY, "time": "08:00"})
    cursor = first.result("journal")["cursor"]
    snapshot = Path(first.result("status")["snapshot"]["path"])
    first.stop()
    count = REWRITE_MIN_FILES + 4
    for n in range(count):
        (vault / "wiki" / f"n{n:03d}.md").write_text(f"## plan\nstep {n}\n", encoding="utf-8")
    assert wikimem("query", "--vault", str(vault), "step").returncode == 0
    second = start_daemon(vault)
    lines = second.result("journal", {"since": cursor, "limit": 1000})["entries"]
    assert sorted((e["action"], e["path"]) for e in lines) == [
        ("create", f"wiki/n{n:03d}.md") for n in range(count)
    ]
    cursor = second.result("journal")["cursor"]
    second.stop()

    snapshot.unlink()  # a deleted cache: the in-process run scans cold and writes one
    (vault / "wiki" / "people.md").write_text("## Ann\nAnn rows now.\n", encoding="utf-8")
    assert wikimem("query", "--vault", str(vault), "rows").returncode == 0
    third = start_daemon(vault)
    assert third.result("status")["snapshot"]["loaded"] is True
    lines = third.result("journal", {"since": cursor})["entries"]
    assert [(e["action"], e["path"]) for e in lines] == [("reset", ".")]
