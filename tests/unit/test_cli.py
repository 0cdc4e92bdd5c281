from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import EXAMPLE


def cli(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "wikimem_watch", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_query_prints_a_readable_table() -> None:
    out = cli("query", "--vault", str(EXAMPLE), "-k", "3", "dentist")
    assert out.returncode == 0, out.stderr
    assert "diary/" in out.stdout and "dentist" in out.stdout.lower()


def test_query_json_is_the_result_object() -> None:
    out = cli(
        "query",
        "--vault",
        str(EXAMPLE),
        "--json",
        "--time-range",
        "2026-11-14..2026-11-14",
        "--explain",
        "火锅",
    )
    result = json.loads(out.stdout)
    assert out.returncode == 0
    assert result["time_range"]["start"] == "2026-11-14"
    assert result["hits"] and "explain" in result["hits"][0]


def test_batch_mode_answers_every_line_in_order_and_exits_1_when_one_failed() -> None:
    lines = "\n".join(
        [
            json.dumps({"q": "dentist", "k": 2}),
            "{not json",
            "",
            json.dumps({"q": "x", "k": -1}),
            json.dumps({"k": 3}),
            json.dumps({"q": "火锅", "k": 1}),
        ]
    )
    out = cli("query", "--vault", str(EXAMPLE), "--json", "-", stdin=lines + "\n")
    results = [json.loads(x) for x in out.stdout.splitlines()]
    assert out.returncode == 1
    assert len(results) == 6  # one line out per line in: results pair with requests
    assert len(results[0]["hits"]) >= 1
    assert results[1]["error"]["code"] == -32700
    assert results[2]["error"]["message"].startswith("empty line")
    assert results[3]["error"]["code"] == -32602 and "k" in results[3]["error"]["message"]
    assert results[4]["error"]["message"].startswith("q is required")
    assert "火锅" in results[5]["hits"][0]["text"]


def test_batch_mode_exits_0_when_every_line_was_answered() -> None:
    lines = json.dumps({"q": "dentist"}) + "\n" + json.dumps({"q": "zzzyyyxxx"}) + "\n"
    out = cli("query", "--vault", str(EXAMPLE), "--json", "-", stdin=lines)
    assert out.returncode == 0
    assert [len(json.loads(x)["hits"]) > 0 for x in out.stdout.splitlines()] == [True, False]


def test_no_result_exits_1() -> None:
    out = cli("query", "--vault", str(EXAMPLE), "--json", "zzzyyyxxx")
    assert out.returncode == 1
    assert json.loads(out.stdout)["hits"] == []


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (("query", "--vault", "/no/such/vault", "x"), "not a directory"),
        (("query", "--vault", str(EXAMPLE), "--time-range", "2026-99-01..2026-01-01", "x"), "date"),
        (("parse-time", "--now", "noon", "昨天"), "--now"),
    ],
)
def test_errors_are_one_line_without_traceback(args: tuple[str, ...], needle: str) -> None:
    out = cli(*args)
    assert out.returncode == 2
    assert out.stderr.startswith("wikimem-watch: ") and needle in out.stderr
    assert "Traceback" not in out.stderr


def test_parse_time_json_contract() -> None:
    out = cli("parse-time", "--now", "2026-07-24T15:00", "--json", "上周三")
    data = json.loads(out.stdout)
    assert (data["start"], data["end"]) == ("2026-07-15", "2026-07-15")
    none = cli("parse-time", "--now", "2026-07-24T15:00", "--json", "晚上月亮")
    assert json.loads(none.stdout) is None and none.returncode == 1


def test_help_lists_exit_codes() -> None:
    out = cli("query", "--help")
    assert "exit status" in out.stdout


def test_in_process_query_leaves_the_vault_untouched(tmp_path: Path) -> None:
    vault = tmp_path / "v"
    (vault / "diary").mkdir(parents=True)
    (vault / "diary" / "2026-01-01.md").write_text("## 10:00\nhello\n", encoding="utf-8")
    before = sorted(p.relative_to(vault) for p in vault.rglob("*"))
    assert cli("query", "--vault", str(vault), "hello").returncode == 0
    assert sorted(p.relative_to(vault) for p in vault.rglob("*")) == before
