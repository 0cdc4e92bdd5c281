"""The reading commands (shells.reading) without a daemon: in-process, as ``query`` is."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import EXAMPLE, write

ROOT = Path(__file__).resolve().parents[2]


def cli(*args: str, cwd: Path | None = None, **env: str) -> subprocess.CompletedProcess[str]:
    child = {**os.environ, "PYTHONPATH": str(ROOT), **env}
    child.pop("WIKIMEM_SOCK", None)
    return subprocess.run(
        [sys.executable, "-m", "wikimem_watch", *args],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=cwd,
        env=child,
    )


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    root = tmp_path / "v"
    write(root, "diary/2026-07-20.md", "## 08:00\nCoffee with [[people#Ann]].\n\n## 08:00\nMore.\n")
    write(root, "wiki/people.md", "# People\n\n## Ann\nLikes [[places]] and ![[ann.png]].\n")
    return root


@pytest.mark.parametrize(
    "command",
    [
        ("days",),
        ("day", "2026-07-20"),
        ("note", "wiki/people.md"),
        ("status",),
        ("reindex", "--dry-run"),
    ],
)
def test_reading_commands_answer_in_process_without_a_daemon_and_say_so(
    vault: Path, command: tuple[str, ...]
) -> None:
    out = cli(*command, "--vault", str(vault))
    assert out.returncode == 0, out.stderr
    assert out.stderr == f"wikimem-watch: no daemon running for {vault}; answering in-process\n"
    assert out.stdout.strip()


def test_json_output_is_the_socket_methods_object(vault: Path) -> None:
    days = json.loads(cli("days", "--vault", str(vault), "--json").stdout)
    assert days == {"days": [{"date": "2026-07-20", "entries": 2}]}
    day = json.loads(cli("day", "--vault", str(vault), "--json", "2026-07-20").stdout)
    assert day["date"] == "2026-07-20"
    assert [e["id"] for e in day["entries"]] == [
        "diary/2026-07-20.md#08:00",
        "diary/2026-07-20.md#08:00~2",
    ]
    note = json.loads(cli("note", "--vault", str(vault), "--json", "people").stdout)
    assert note["path"] == "wiki/people.md" and note["entries"][0]["heading"] == "Ann"


def test_a_day_without_entries_says_so_and_exits_1(vault: Path) -> None:
    out = cli("day", "--vault", str(vault), "--in-process", "2026-07-21")
    assert (out.returncode, out.stdout) == (1, "no entries on 2026-07-21\n")


def test_a_note_without_entries_says_so_and_exits_1(vault: Path) -> None:
    """An empty note printed nothing at all (exit 1), where ``day`` and ``days`` say so."""
    write(vault, "wiki/empty.md", "")
    out = cli("note", "--vault", str(vault), "--in-process", "wiki/empty.md")
    assert (out.returncode, out.stdout) == (1, "no entries in wiki/empty.md\n")


def test_days_without_diary_entries_says_so_and_exits_1(tmp_path: Path) -> None:
    write(tmp_path, "wiki/a.md", "## A\nalpha\n")
    out = cli("days", "--vault", str(tmp_path), "--in-process")
    assert (out.returncode, out.stdout) == (1, "no diary entries\n")


@pytest.mark.parametrize("typed", ["./wiki/people.md", "v/wiki/people.md", "wiki/people"])
def test_note_accepts_what_people_type_from_the_vaults_parent(vault: Path, typed: str) -> None:
    out = cli("note", "--vault", "v", "--in-process", "--json", typed, cwd=vault.parent)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["path"] == "wiki/people.md"


def test_note_given_the_vault_as_typed_with_dot_dot_finds_the_note(vault: Path) -> None:
    """From a sibling folder: ``--vault ../v ../v/wiki/people.md`` is VAULT/wiki/people.md."""
    (vault.parent / "elsewhere").mkdir()
    out = cli(
        "note", "--vault", "../v", "--in-process", "--json", "../v/wiki/people.md",
        cwd=vault.parent / "elsewhere",
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["path"] == "wiki/people.md"


def test_note_outside_the_vault_is_a_clear_error(vault: Path) -> None:
    out = cli("note", "--vault", str(vault), "--in-process", "/etc/hosts")
    assert out.returncode == 2
    assert out.stderr == f"wikimem-watch: '/etc/hosts' is outside the vault '{vault}'\n"


def test_status_in_process_lists_unresolved_links_but_not_image_embeds(vault: Path) -> None:
    status = json.loads(cli("status", "--vault", str(vault), "--in-process", "--json").stdout)
    assert status["state"] == "in-process"
    assert status["unresolved_links"] == 1
    assert status["unresolved"] == [
        {"id": "wiki/people.md#Ann", "path": "wiki/people.md", "line": 3, "target": "places"}
    ]
    assert status["vectors"] == {"state": "off"} and "socket" not in status
    table = cli("status", "--vault", str(vault), "--in-process").stdout
    assert "links    1 unresolved\n         [[places]] in wiki/people.md:3\n" in table


def test_status_says_when_the_cache_dir_cannot_be_used(vault: Path, tmp_path: Path) -> None:
    """``status.cache`` said it; the table left it out, so no vectors came with no reason."""
    (tmp_path / "elsewhere").mkdir()
    (vault / ".wikimem").symlink_to(tmp_path / "elsewhere")
    table = cli("status", "--vault", str(vault), "--in-process").stdout
    lines = [ln for ln in table.splitlines() if ln.startswith("cache    ")]
    assert len(lines) == 1 and "outside the vault" in lines[0], table


def test_status_lists_20_skipped_and_warned_files_and_counts_them_all(vault: Path) -> None:
    """1,000 binary notes made ``status`` one line (and one JSON object) per file."""
    for i in range(25):
        (vault / f"blob{i:02}.md").write_bytes(b"a\x00b")
        (vault / "diary" / f"someday{i:02}.md").write_text("## x\nwhen?\n", encoding="utf-8")
    status = json.loads(cli("status", "--vault", str(vault), "--in-process", "--json").stdout)
    assert status["skipped_files"] == 25 and status["warned_files"] == 25
    assert [s["path"] for s in status["skipped"]] == [f"blob{i:02}.md" for i in range(20)]
    assert list(status["warnings"]) == [f"diary/someday{i:02}.md" for i in range(20)]
    table = cli("status", "--vault", str(vault), "--in-process").stdout
    assert table.count("\nskipped  ") == 20 and table.count("\nwarning  ") == 20
    assert "… and 5 more skipped files (all: wikimem-watch reindex --dry-run)\n" in table
    assert "… and 5 more warned files\n" in table


def test_a_dry_run_without_a_daemon_lists_what_a_scan_would_index(vault: Path) -> None:
    write(vault, "wiki/blob.md", "")
    (vault / "wiki" / "blob.md").write_bytes(b"\x00binary")
    out = cli("reindex", "--vault", str(vault), "--in-process", "--dry-run")
    assert out.returncode == 0
    assert out.stdout.splitlines() == [
        "a rescan would change: 2 changed, 0 removed, 0 unchanged, 1 skipped",
        "  changed  diary/2026-07-20.md",
        "  changed  wiki/people.md",
        "  skipped  wiki/blob.md",
    ]


def test_reindex_without_a_daemon_and_without_dry_run_says_there_is_none(vault: Path) -> None:
    out = cli("reindex", "--vault", str(vault))
    assert out.returncode == 2 and out.stderr.startswith("wikimem-watch: no daemon is running")


def test_check_without_a_daemon_says_there_is_nothing_to_compare(vault: Path) -> None:
    out = cli("check", "--vault", str(vault))
    assert out.returncode == 2
    assert "no daemon is running" in out.stderr and "nothing to compare" in out.stderr


def test_a_stop_word_query_says_nothing_searchable_was_left(vault: Path) -> None:
    out = cli("query", "--vault", str(vault), "--in-process", "the of and")
    assert out.returncode == 1
    assert out.stdout == (
        "no results: nothing searchable left in 'the of and' after removing stop words\n"
    )


def test_query_explain_prints_the_score_breakdown_in_the_table() -> None:
    out = cli("query", "--vault", str(EXAMPLE), "--in-process", "--explain", "-k", "1", "火锅")
    assert out.returncode == 0
    breakdown = out.stdout.splitlines()[2]
    assert breakdown.lstrip().startswith("bm25 ")
    for part in ("previous", "recency", "terms 火锅"):
        assert part in breakdown
    assert "cosine" not in breakdown  # BM25 only: no vector part to show


def test_an_unknown_environment_variable_warns_once_with_the_closest_name(vault: Path) -> None:
    out = cli("days", "--vault", str(vault), "--in-process", WIKIMEM_WATCH_HALF_LIFE="3")
    assert out.returncode == 0
    assert out.stderr == (
        "wikimem-watch: warning: unknown variable WIKIMEM_WATCH_HALF_LIFE "
        "(did you mean WIKIMEM_WATCH_HALF_LIFE_DAYS?); ignored\n"
    )
