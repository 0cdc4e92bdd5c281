"""``reindex --dry-run``: what a rescan would change, applying nothing (core.plan)."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import write
from wikimem_watch.config import load_config
from wikimem_watch.core.engine import Engine
from wikimem_watch.core.plan import plan_scan


def test_the_plan_lists_what_a_rescan_would_change_and_applies_none_of_it(
    tmp_path: Path,
) -> None:
    write(tmp_path, "wiki/a.md", "## A\nalpha\n")
    write(tmp_path, "wiki/b.md", "## B\nbeta\n")
    write(tmp_path, "wiki/c.md", "## C\ngamma\n")
    engine = Engine(load_config(tmp_path))
    engine.scan()
    generation, digest = engine.generation, engine.digest()

    write(tmp_path, "wiki/a.md", "## A\nalpha, edited\n")
    (tmp_path / "wiki" / "b.md").unlink()
    write(tmp_path, "wiki/new.md", "## New\ndelta\n")
    (tmp_path / "wiki" / "bin.md").write_bytes(b"\x00\x01binary")
    plan = plan_scan(engine)

    assert plan["paths"] == {
        "changed": ["wiki/a.md", "wiki/new.md"],
        "removed": ["wiki/b.md"],
        "skipped": ["wiki/bin.md"],
    }
    assert (plan["changed"], plan["removed"], plan["unchanged"], plan["skipped"]) == (2, 1, 1, 1)
    assert (engine.generation, engine.digest()) == (generation, digest), "nothing applied"
    stats = engine.scan()
    assert (sorted(stats.changed), stats.removed, stats.skipped) == (
        ["wiki/a.md", "wiki/new.md"],
        ["wiki/b.md"],
        ["wiki/bin.md"],
    )


def test_against_an_engine_that_holds_nothing_every_note_would_be_indexed(
    tmp_path: Path,
) -> None:
    write(tmp_path, "wiki/a.md", "## A\nalpha\n")
    write(tmp_path, "diary/2026-01-01.md", "## 10:00\nhello\n")
    plan = plan_scan(Engine(load_config(tmp_path)))
    assert plan["paths"] == {
        "changed": ["diary/2026-01-01.md", "wiki/a.md"],
        "removed": [],
        "skipped": [],
    }
    assert plan["unchanged"] == 0 and plan["dry_run"] is True
