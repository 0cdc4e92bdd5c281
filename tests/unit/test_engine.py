from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.conftest import held, write
from wikimem_watch.config import load_config
from wikimem_watch.core.engine import Engine
from wikimem_watch.core.models import Link
from wikimem_watch.core.snapshot import scan_with_snapshot
from wikimem_watch.errors import NotFound


def fresh(root: Path) -> Engine:
    engine = Engine(load_config(root))
    engine.scan()
    return engine


def test_example_vault_special_cases(example_engine: Engine) -> None:
    same_minute = [e for e in example_engine.entries_on("2026-11-14") if e.time == "19:30"]
    assert len(same_minute) == 2
    assert len(example_engine.entries_on("2026-10-25")) == 1
    assert any(e.time is None for e in example_engine.entries_on("2026-11-08"))
    snippets = [e.heading for e in example_engine.entries_of("notes/Snippets.md")]
    assert "08:15" not in snippets and len(snippets) >= 3
    assert example_engine.skipped == {}


def test_dot_folders_and_non_markdown_are_ignored(example_vault: Path) -> None:
    write(example_vault, ".obsidian/x.md", "## a\nhidden\n")
    write(example_vault, ".trash/old.md", "## a\nhidden\n")
    write(example_vault, "notes/pic.txt", "text")
    engine = fresh(example_vault)
    assert not any(p.startswith((".obsidian", ".trash")) for p in engine.files)
    assert "notes/pic.txt" not in engine.files


def test_unchanged_file_costs_nothing_and_changes_bump_generation(example_vault: Path) -> None:
    engine = fresh(example_vault)
    gen = engine.generation
    stats = engine.apply(["wiki/people.md"])
    assert stats.unchanged == 1 and engine.generation == gen
    path = example_vault / "wiki/people.md"
    path.write_text(
        path.read_text(encoding="utf-8") + "\n## 新朋友\n刚认识的朋友\n", encoding="utf-8"
    )
    stats = engine.apply(["wiki/people.md"])
    assert stats.changed == ["wiki/people.md"] and engine.generation == gen + 1


def test_incremental_edits_equal_a_fresh_scan(example_vault: Path) -> None:
    engine = fresh(example_vault)
    write(example_vault, "diary/2026-11-29.md", "# 2026-11-29\n\n## 10:00\nnew day\n")
    (example_vault / "wiki/health.md").unlink()
    os.rename(example_vault / "notes/Snippets.md", example_vault / "notes/Code.md")
    engine.apply(["diary/2026-11-29.md", "wiki/health.md", "notes/Snippets.md", "notes/Code.md"])
    again = fresh(example_vault)
    assert engine.digest() == again.digest()
    assert engine.file_digests() == again.file_digests()


def test_bad_files_are_skipped_and_reported_not_fatal(example_vault: Path) -> None:
    (example_vault / "notes/binary.md").write_bytes(b"\x00\x01\x02 not text")
    (example_vault / "notes/latin1.md").write_bytes("## café\ncaf\xe9 au lait\n".encode("latin-1"))
    engine = fresh(example_vault)
    assert "binary" in engine.skipped["notes/binary.md"]
    assert "notes/latin1.md" in engine.files
    assert any("UTF-8" in w for w in engine.warnings()["notes/latin1.md"])


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads any file")
def test_unreadable_file_is_skipped_with_reason(example_vault: Path) -> None:
    path = write(example_vault, "notes/secret.md", "## a\nx\n")
    path.chmod(0)
    engine = fresh(example_vault)
    assert engine.skipped["notes/secret.md"] == "permission denied"


def test_links_resolve_by_name_heading_and_wikimem_form(example_engine: Engine) -> None:
    people = example_engine.resolve(Link("people", "小周", style="obsidian"))
    assert [e.heading for e in people] == ["小周"]
    whole = example_engine.resolve(Link("file", "people", style="wikimem"))
    assert {e.path for e in whole} == {"wiki/people.md"}
    assert example_engine.resolve(Link("cover.png", embed=True)) == []
    unresolved = {u["target"] for u in example_engine.unresolved_links()}
    assert "cover.png" not in unresolved  # an image embed is not a link to a missing note


def test_backlinks_name_the_linking_entries(example_engine: Engine) -> None:
    sources = {e.path for e, _ in example_engine.backlinks("notes/Hangzhou trip.md")}
    assert "notes/Reading list.md" in sources
    with pytest.raises(NotFound):
        example_engine.backlinks("nope.md")


def test_day_counts_and_window(example_engine: Engine) -> None:
    counts = dict(example_engine.day_counts("2026-11-14", "2026-11-14"))
    assert counts == {"2026-11-14": 4}
    from datetime import date

    entries = example_engine.window_entries(date(2026, 11, 14), date(2026, 11, 15))
    assert {e.date for e in entries} == {"2026-11-14", "2026-11-15"}


def test_include_exclude_globs(example_vault: Path) -> None:
    engine = Engine(load_config(example_vault, {"exclude": "notes/*"}))
    engine.scan()
    assert not any(p.startswith("notes/") for p in engine.files)
    only = Engine(load_config(example_vault, {"include": "wiki/*"}))
    only.scan()
    assert set(only.files) and all(p.startswith("wiki/") for p in only.files)


def test_vector_keys_follow_the_embedded_text_and_its_context(tmp_path: Path) -> None:
    """Editing an entry changes its key and the next entry's (its context); nothing else."""
    (tmp_path / "diary").mkdir()
    day = tmp_path / "diary" / "2026-07-20.md"
    day.write_text("## 09:00\nkites\n\n## 09:05\nthe red one\n\n## 09:10\nrain\n")
    engine = Engine(load_config(tmp_path, {"cache_dir": tmp_path / "cache", "embed": "hash"}))
    engine.scan()
    before = set(engine.embedding_inputs())
    assert len(before) == 3
    day.write_text("## 09:00\nkites\n\n## 09:05\nthe blue one\n\n## 09:10\nrain\n")
    engine.apply(["diary/2026-07-20.md"])
    after = engine.embedding_inputs()
    assert len(before - set(after)) == 2, "the edited entry and the one after it"
    assert "the blue one\n09:10\nrain" in after.values()
    slots, _ = engine.index.score(["rain"])
    key = engine.vector_key(int(slots[0]))
    assert after[key].endswith("rain")
    assert engine.slots_of_keys([key]).tolist() == [int(slots[0])]


def test_a_query_never_waits_for_a_file_being_parsed(
    example_vault: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import threading

    from wikimem_watch.core import prepare as prepare_module

    engine = fresh(example_vault)
    parsing, release = held(monkeypatch, prepare_module, "parse_note")
    write(example_vault, "wiki/new.md", "## Quince\nquince jam\n")
    applier = threading.Thread(target=engine.apply, args=(["wiki/new.md"],))
    applier.start()
    try:
        assert parsing.wait(5)
        assert engine.lock.acquire(timeout=5), "the engine lock is held during a parse"
        engine.lock.release()
        assert engine.counts()  # a reader gets through while the applier parses
    finally:
        release.set()
        applier.join(5)
    assert "wiki/new.md" in engine.files


def test_concurrent_appliers_of_the_same_file_end_like_a_fresh_scan(example_vault: Path) -> None:
    import threading

    engine = fresh(example_vault)
    path = example_vault / "wiki/people.md"
    base = path.read_text(encoding="utf-8")

    def edit_and_apply(n: int) -> None:
        for i in range(15):
            path.write_text(base + f"\n## Edit {n} {i}\nword{n}x{i}\n", encoding="utf-8")
            engine.apply(["wiki/people.md"])

    threads = [threading.Thread(target=edit_and_apply, args=(n,)) for n in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    engine.apply(["wiki/people.md"])  # the last write may have landed after every apply
    assert engine.digest() == fresh(example_vault).digest()


def test_image_embeds_and_other_attachments_are_not_unresolved_links(tmp_path: Path) -> None:
    write(
        tmp_path,
        "wiki/a.md",
        "## A\n![[cover.png]] [[scan.PDF]] ![[clip.mp3]] [[Release 1.2]] [[missing note]]"
        " [[Vue.js]]\n",
    )
    targets = [u["target"] for u in fresh(tmp_path).unresolved_links()]
    assert targets == ["Release 1.2", "missing note", "Vue.js"]  # a dotted name is a note's
    assert Link("cover.png", embed=True).attachment and not Link("notes.md").attachment


def test_information_after_edits_equals_a_fresh_scan(tmp_path: Path) -> None:
    day = "diary/2026-11-01.md"
    write(tmp_path, day, "## 09:00\nzebra quokka tea\n")
    write(tmp_path, "wiki/food.md", "## cake\ntea and cake\n")
    engine = fresh(tmp_path)

    def info(e: Engine) -> dict[str, float]:
        slots = [s for rec in e.files.values() for s in rec.slots]
        return {e.slot_id(s): v for s, v in zip(slots, e.information(slots).tolist(), strict=True)}

    first = info(engine)  # remembers each entry's terms
    assert first == info(fresh(tmp_path)) and first[day + "#09:00"] > first["wiki/food.md#cake"]
    # The same text comes back at the same slot after its rare words were forgotten: their
    # new ids must be read, not the remembered ones.
    (tmp_path / day).unlink()
    engine.apply([day])
    engine.index.flush(force=True)
    assert engine.index.forgotten == 2  # zebra, quokka
    write(tmp_path, day, "## 09:00\nzebra quokka tea\n")
    engine.apply([day])
    assert info(engine) == info(fresh(tmp_path)) == first
    write(tmp_path, day, "## 09:00\ntea\n")  # an edit: the content hash differs
    engine.apply([day])
    assert info(engine) == info(fresh(tmp_path))
    assert info(engine)[day + "#09:00"] < first[day + "#09:00"]


def test_information_of_a_reused_slot_reads_the_tags_its_entry_has_now(tmp_path: Path) -> None:
    # The content hash covers the heading and the text, not the note's frontmatter tags: an
    # entry at a slot that held the same text with other tags must not keep their terms.
    day = "diary/2026-11-01.md"
    write(tmp_path, "wiki/w.md", "## a\nalpha some text\n\n## b\nbeta\n\n## c\nbeta\n")
    write(tmp_path, day, "---\ntags: [alpha]\n---\n## 09:00\nsome text\n")
    engine = fresh(tmp_path)
    slot = engine.slot_of(day + "#09:00")
    assert slot is not None
    engine.information([slot])  # remembers the entry's terms (alpha among them)
    (tmp_path / day).unlink()
    engine.apply([day])
    engine.index.flush(force=True)  # the slot is free: the next entry takes it
    assert engine.index.forgotten == 0
    write(tmp_path, day, "---\ntags: [beta]\n---\n## 09:00\nsome text\n")
    engine.apply([day])
    assert engine.slot_of(day + "#09:00") == slot and engine.store.tags_of(slot) == ("beta",)
    want = fresh(tmp_path)
    at = want.slot_of(day + "#09:00")
    assert at is not None
    assert engine.information([slot]).tolist() == want.information([at]).tolist()


def test_entries_of_two_files_of_one_day_at_one_time_keep_a_fresh_scans_order(
    tmp_path: Path,
) -> None:
    for folder in ("diary/a", "diary/b"):
        write(tmp_path, f"{folder}/2026-01-01.md", f"## 09:00\nfrom {folder}\n")
    engine = fresh(tmp_path)
    write(tmp_path, "diary/a/2026-01-01.md", "## 09:00\nfrom a, edited\n")
    engine.apply(["diary/a/2026-01-01.md"])  # applied last, yet not listed last
    ids = [e.id for e in engine.entries_on("2026-01-01")]
    assert ids == [e.id for e in fresh(tmp_path).entries_on("2026-01-01")]
    assert ids == ["diary/a/2026-01-01.md#09:00", "diary/b/2026-01-01.md#09:00"]


def _stale(engine: Engine, rel: str, change: object) -> str:
    """The digest of ``engine`` after ``change(store, slot)`` on the first entry of ``rel``,
    with that file's digest read again from the store (as a snapshot restore reads it)."""
    record = engine.files[rel]
    slot = next(iter(record.slots))
    change(engine.store, slot)  # type: ignore[operator]
    engine._digest ^= record.digest
    engine._digest_pending.add(rel)
    return engine.digest()


@pytest.mark.parametrize(
    "change",
    [
        lambda store, slot: store.tags.put([slot], [[("stale",)]]),
        lambda store, slot: store.title.__setitem__(slot, "Old title"),
        lambda store, slot: store.aliases.__setitem__(slot, ("Old alias",)),
    ],
    ids=["tag", "title", "alias"],
)
def test_a_live_index_wrong_only_in_a_tag_title_or_alias_differs_from_a_fresh_scan(
    tmp_path: Path, change: object
) -> None:
    """``check`` compares digests; they covered entry ids and texts, so an index holding a
    note's old front-matter tag, title or alias (what a query filters on and returns) passed
    it. Equal vaults still agree, also when a digest is read again from the store."""
    write(tmp_path, "wiki/a.md", "---\ntitle: A\naliases: [Alpha]\ntags: [x]\n---\n## Item\ntext\n")
    write(tmp_path, "b.md", "# Bee\nprose #inline\n")
    engine, fresh = (Engine(load_config(tmp_path, {"snapshot": False})) for _ in range(2))
    engine.scan()
    fresh.scan()
    assert engine.digest() == fresh.digest()
    assert _stale(engine, "b.md", lambda store, slot: None) == fresh.digest()
    assert _stale(engine, "wiki/a.md", change) != fresh.digest()
    assert engine.file_digests()["wiki/a.md"] != fresh.file_digests()["wiki/a.md"]
    assert engine.file_digests()["b.md"] == fresh.file_digests()["b.md"]


def test_a_section_with_no_time_keeps_its_place_after_the_timed_entry_above_it(
    tmp_path: Path,
) -> None:
    """``## 晚饭后`` between 09:00 and 21:00 was listed first (its minute, -1, sorted before
    every time), and its entry before was none: it follows 09:00 in a day's order and its
    neighbours, live, in a fresh scan and after a snapshot load alike."""
    day = "diary/2026-01-01.md"
    write(tmp_path, day, "## 09:00\nmorning\n\n## 晚饭后\nafter dinner\n\n## 21:00\nnight\n")
    write(tmp_path, "diary/2026-01-02.md", "## Notes\nno time at the top\n\n## 08:00\nearly\n")
    for path in tmp_path.rglob("*.md"):
        os.utime(path, (1_700_000_000, 1_700_000_000))  # not racy: the snapshot is trusted
    engine = Engine(load_config(tmp_path, {"snapshot_dir": str(tmp_path / "snap")}))
    scan_with_snapshot(engine)  # a cold scan, then the snapshot is written
    restored = Engine(load_config(tmp_path, {"snapshot_dir": str(tmp_path / "snap")}))
    stats = scan_with_snapshot(restored)
    assert stats.changed == [] and stats.unchanged == 0  # nothing read: all from the snapshot
    live = Engine(load_config(tmp_path, {"snapshot": False}))
    write(tmp_path, "diary/2026-01-01.md", "## 09:00\nmorning\n")
    live.scan()
    write(tmp_path, day, "## 09:00\nmorning\n\n## 晚饭后\nafter dinner\n\n## 21:00\nnight\n")
    live.apply([day])  # applied again, as an edit is
    want = [day + "#09:00", day + "#晚饭后", day + "#21:00"]
    for e in (engine, restored, live):
        assert [x.id for x in e.entries_on("2026-01-01")] == want
        assert [x.id for x in e.entries_on("2026-01-02")][0] == "diary/2026-01-02.md#Notes"
        after = e.slot_of(day + "#晚饭后")
        assert after is not None and int(e.store.prev[after]) == e.slot_of(day + "#09:00")
        assert int(e.store.next[after]) == e.slot_of(day + "#21:00")
