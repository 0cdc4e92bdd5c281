from __future__ import annotations

import argparse
import io
import json
import socket
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import EXAMPLE, hanging_up_daemon, scripted_daemon
from wikimem_watch.shells.cli import (
    COMMANDS,
    LOG_LEVELS,
    build_parser,
    handler_of,
    main,
    parse_args,
)


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


def test_batch_mode_answers_lines_that_are_not_text_or_nest_too_deep_and_goes_on() -> None:
    lines = [
        '{"q": "\\ud800 dentist"}',  # a JSON escape of a lone surrogate
        "[" * 100_000 + "]" * 100_000,
        json.dumps({"q": "火锅", "k": 1}),
    ]
    raw = ("\n".join(lines) + "\n").encode() + b'{"q": "\xff\xfe"}\n'  # not UTF-8
    out = subprocess.run(
        [sys.executable, "-m", "wikimem_watch", "query", "--vault", str(EXAMPLE), "--json", "-"],
        input=raw,
        capture_output=True,
        timeout=60,
    )
    results = [json.loads(x) for x in out.stdout.decode().splitlines()]
    assert out.returncode == 1 and b"Traceback" not in out.stderr
    assert len(results) == 4
    assert "lone surrogate" in results[0]["error"]["message"]
    assert results[1]["error"] == {"code": -32700, "message": "bad JSON: nested too deeply"}
    assert "火锅" in results[2]["hits"][0]["text"]
    assert "not valid text" in results[3]["error"]["message"]


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
        (("parse-time", "--now", "", "today"), "--now ''"),
        (("serve", str(EXAMPLE), "--debounce-ms", "20000"), "debounce_ms=20000"),
        (("serve", str(EXAMPLE), "--debounce-ms", "-5"), "debounce_ms=-5"),
        (("serve", str(EXAMPLE), "--safety-rescan-s", "-3"), "--safety-rescan-s"),
        (("query", "--vault", str(EXAMPLE), "--now", "yesterday", "x"), "ISO-8601"),
        (("query", "--vault", str(EXAMPLE), "-k", "0", "x"), "k: expected"),
        (("query", "--vault", str(EXAMPLE), "--tz", "Mars/Base", "x"), "unknown time zone"),
        (("query", "--vault", str(EXAMPLE), "--time-range", "bogus", "x"), "no date or time"),
        (("day", "--vault", str(EXAMPLE), "14-11-2026"), "must be a date"),
        (
            ("days", "--vault", str(EXAMPLE), "--start", "", "--end", "2026-11-01"),
            '"start" must be',
        ),
        # `--paths "$UNSET"` is refused, not read as "no filter" over the whole vault
        (("query", "--vault", str(EXAMPLE), "--paths", "", "x"), "--paths ''"),
        (("query", "--vault", str(EXAMPLE), "--tags", ",", "x"), "--tags ','"),
        (("query", "--vault", str(EXAMPLE), "--kinds", "", "x"), "--kinds ''"),
        (("query", "--vault", str(EXAMPLE), "--time-range", "", "x"), "time_range: empty"),
        (("watch-changes", "--vault", str(EXAMPLE), "--paths", ""), "--paths ''"),
        (("watch-changes", "--vault", str(EXAMPLE), "--kinds", ","), "--kinds ','"),
        (("watch-changes", "--vault", str(EXAMPLE), "--q", ""), "--q ''"),
    ],
)
def test_errors_are_one_line_without_traceback(args: tuple[str, ...], needle: str) -> None:
    out = cli(*args)
    assert out.returncode == 2
    assert out.stderr.startswith("wikimem-watch: ") and needle in out.stderr
    assert "Traceback" not in out.stderr
    assert "answering in-process" not in out.stderr  # a refusal is not an answer


def test_parse_time_json_contract() -> None:
    out = cli("parse-time", "--now", "2026-07-24T15:00", "--json", "上周三")
    data = json.loads(out.stdout)
    assert (data["start"], data["end"]) == ("2026-07-15", "2026-07-15")
    none = cli("parse-time", "--now", "2026-07-24T15:00", "--json", "晚上月亮")
    assert json.loads(none.stdout) is None and none.returncode == 1


def test_parse_time_takes_several_words_without_quotes_as_query_does() -> None:
    out = cli("parse-time", "--now", "2026-07-24T15:00", "--json", "last", "week")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["matched"] == "last week"


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


# ------------------------------------------------- one command's parser, or every command's


def subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def leaf_parsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """Every parser that takes a command's arguments (``write diary``, not ``write``)."""
    out = {}
    for name, p in subparsers(parser).items():
        if any(isinstance(a, argparse._SubParsersAction) for a in p._actions):
            out.update({f"{name} {k}": v for k, v in leaf_parsers(p).items()})
        else:
            out[name] = p
    return out


def test_the_one_command_parser_holds_that_command_alone() -> None:
    for name in COMMANDS:
        assert list(subparsers(build_parser(name))) == [name]
    assert list(subparsers(build_parser())) == list(COMMANDS)


def test_each_commands_help_is_the_same_from_its_own_parser_and_from_the_full_one() -> None:
    full = leaf_parsers(build_parser())
    for name in COMMANDS:
        own = leaf_parsers(build_parser(name))
        assert own and all(full[k].format_help() == p.format_help() for k, p in own.items()), name
        assert subparsers(build_parser(name))[name].format_help() == (
            subparsers(build_parser())[name].format_help()
        )


def test_every_commands_help_says_what_it_does_and_its_exit_status() -> None:
    for name, parser in leaf_parsers(build_parser()).items():
        text = parser.format_help()
        assert parser.description, f"{name} --help has no description"
        assert "exit status: 0 ok" in text, f"{name} --help has no exit status"


def test_every_command_names_a_handler_that_exists() -> None:
    for name, parser in leaf_parsers(build_parser()).items():
        handler = handler_of(argparse.Namespace(handler=parser.get_default("handler")))
        assert callable(handler), name


def outcome(
    parse: Callable[[list[str]], argparse.Namespace],
    argv: list[str],
    capsys: pytest.CaptureFixture[str],
) -> tuple[object, str, str]:
    """What parsing ``argv`` returns or exits with, and what it prints."""
    try:
        result: object = vars(parse(argv))
    except SystemExit as exc:
        result = ("exit", exc.code)
    out, err = capsys.readouterr()
    return result, out, err


def full_parse(argv: list[str]) -> argparse.Namespace:
    """The parse before the one-command shortcut: the full parser, then the level check."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if str(args.log_level).upper() not in LOG_LEVELS:
        parser.error(f"--log-level {args.log_level!r}: expected DEBUG, INFO, WARNING or ERROR")
    return args


@pytest.mark.parametrize(
    "argv",
    [
        ["query", "--vault", "v", "--json", "-k", "3", "tea"],
        ["--log-level", "debug", "days", "--vault", "v", "--start", "2026-01-01"],
        ["--log-level", "status", "query", "x"],  # a command's name as a value, then another
        ["--log-level", "query", "query", "x"],
        ["--log", "INFO", "write", "diary", "--vault", "v", "hello"],
        ["write", "wiki", "people", "Ann", "-"],
        ["-h", "query"],
        ["query", "-h"],
        ["write", "--help"],
        ["--version", "stop"],
        ["--log-level", "bogus", "status"],
        ["query"],
        ["query", "--bogus", "x"],
        ["query", "-k", "three", "x"],
        ["query", "--embed", "nope", "x"],
        ["write", "bogus"],
        ["querry", "x"],
        ["x", "query"],
        [],
        ["serve", "vault", "--debounce-ms", "5", "--quiet"],
    ],
)
def test_parsing_through_one_commands_parser_prints_and_returns_what_the_full_parser_does(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert outcome(parse_args, argv, capsys) == outcome(full_parse, argv, capsys)


def test_a_write_stamped_in_the_year_1_names_its_day_file_with_four_digits(
    tmp_path: Path,
) -> None:
    (tmp_path / "diary").mkdir()
    out = cli("write", "diary", "--vault", str(tmp_path), "--ts", "0001-01-01T00:00+00:00", "x")
    assert out.returncode == 0, out.stderr
    assert [p.name for p in (tmp_path / "diary").iterdir()] == ["0001-01-01.md"]


def test_journal_says_how_many_lines_it_skipped(tmp_path: Path) -> None:
    good = {"ts": "2026-07-21T08:31:10+00:00", "action": "edit", "path": "a.md", "by": "external"}
    (tmp_path / "journal.jsonl").write_bytes(
        json.dumps(good).encode() + b"\nnot json\n\xff\xfe\n[1, 2]\n"
    )
    out = cli("journal", "--vault", str(tmp_path), "--limit", "10")
    assert out.returncode == 0, out.stderr
    assert [json.loads(x) for x in out.stdout.splitlines()] == [good]
    assert "skipped 3 journal line(s) that are not JSON objects" in out.stderr


def test_a_socket_no_daemon_serves_is_named_before_answering_in_process(tmp_path: Path) -> None:
    sock = tmp_path / "nobody.sock"
    out = cli("query", "--vault", str(EXAMPLE), "--socket", str(sock), "--json", "dentist")
    assert out.returncode == 0 and json.loads(out.stdout)["hits"]
    assert f"no daemon is listening on {str(sock)!r}; answering in-process" in out.stderr


def test_a_wikimem_sock_no_daemon_serves_is_named_not_the_vault(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ "no daemon running for VAULT" was false when the vault's daemon ran on its own socket
    and only the one WIKIMEM_SOCK names was silent."""
    sock = tmp_path / "nobody.sock"
    monkeypatch.setenv("WIKIMEM_SOCK", str(sock))
    out = cli("query", "--vault", str(EXAMPLE), "--json", "dentist")
    assert out.returncode == 0 and json.loads(out.stdout)["hits"]
    assert f"no daemon is listening on {str(sock)!r}; answering in-process" in out.stderr


def test_a_write_the_daemon_took_but_did_not_answer_is_not_made_again(tmp_path: Path) -> None:
    """A daemon that read the write and closed without a reply may have made it: the CLI says
    so and does not write it a second time in-process."""
    vault = tmp_path / "v"
    (vault / "diary").mkdir(parents=True)
    with hanging_up_daemon(vault) as path:
        out = cli(
            "write", "diary", "--vault", str(vault), "--socket", str(path), "--date", "2026-01-01",
            "--time", "10:00", "walked the dog",
        )  # fmt: skip
    assert out.returncode == 2 and "may have been made" in out.stderr
    assert not (vault / "diary" / "2026-01-01.md").exists()


def test_a_diary_write_is_filed_in_the_commands_own_time_zone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Sent with its day and time, so a daemon running with another TZ files it where an
    in-process write would."""
    import time

    from wikimem_watch.shells.writing import _local_day_and_time

    monkeypatch.setenv("TZ", "Pacific/Kiritimati")  # UTC+14
    time.tzset()
    try:
        args = argparse.Namespace(ts="2026-01-01T23:30:00+00:00", date=None, time=None)
        got = _local_day_and_time(args)
    finally:
        monkeypatch.undo()
        time.tzset()
    assert got == {"date": "2026-01-02", "time": "13:30", "ts": "2026-01-01T23:30:00+00:00"}


def test_a_backdated_diary_write_from_the_command_line_happened_then(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``write diary --date D --time T`` without ``--ts`` sent now as ``ts``, so the entry
    read as written today and the recency decay ranked it fresh (ADR-0016, addendum)."""
    import time

    from wikimem_watch.shells.writing import _local_day_and_time

    monkeypatch.setenv("TZ", "Pacific/Kiritimati")  # UTC+14
    time.tzset()
    try:
        back = _local_day_and_time(argparse.Namespace(ts=None, date="2026-01-01", time="9:30"))
        now = _local_day_and_time(argparse.Namespace(ts=None, date=None, time=None))
    finally:
        monkeypatch.undo()
        time.tzset()
    assert back == {"date": "2026-01-01", "time": "9:30", "ts": "2026-01-01T09:30:00+14:00"}
    assert str(now["ts"]).endswith("+14:00") and str(now["ts"])[11:16] == now["time"]


def test_a_note_that_is_not_there_is_no_result_not_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Exit 1, as an empty answer: a script can tell it from a daemon that does not answer."""
    (tmp_path / "a.md").write_text("## x\n\ny\n", encoding="utf-8")
    assert main(["note", "--vault", str(tmp_path), "--in-process", "nope"]) == 1
    assert "nope" in capsys.readouterr().err


def test_an_abbreviated_option_is_not_taken_for_another(capsys: pytest.CaptureFixture[str]) -> None:
    """argparse's abbreviations read ``--k 3`` as ``--kinds 3``."""
    with pytest.raises(SystemExit) as exit_:
        parse_args(["query", "--vault", str(EXAMPLE), "--k", "3", "coffee"])
    assert exit_.value.code == 2 and "--k" in capsys.readouterr().err


def test_batch_mode_takes_the_flags_as_defaults_of_every_line() -> None:
    lines = [json.dumps({"q": "火锅"}), json.dumps({"q": "火锅", "k": 1, "kinds": ["diary"]})]
    out = cli(
        "query", "--vault", str(EXAMPLE), "--json", "-k", "2", "--kinds", "wiki", "--explain", "-",
        stdin="\n".join(lines) + "\n",
    )  # fmt: skip
    first, second = (json.loads(x) for x in out.stdout.splitlines())
    assert len(first["hits"]) == 2 and {h["kind"] for h in first["hits"]} == {"wiki"}
    assert all("explain" in h for h in first["hits"])
    assert len(second["hits"]) == 1 and second["hits"][0]["kind"] == "diary"  # its own fields


@pytest.mark.parametrize(
    ("flags", "said"),
    [
        (["--now", "garbage"], "now: 'garbage' is not ISO-8601"),
        (["--tz", "Nowhere/Zone"], "tz: unknown time zone"),
        (["--time-range", "zzz"], "time_range: no date or time expression in 'zzz'"),
        (["--time-range", "2026-11-02..2026-11-01"], "time_range: start 2026-11-02 is after"),
        (["--kinds", "diary,notes"], "kinds: expected a list drawn from"),
        (["-k", "0"], "k: expected an integer in [1, 1000], got 0"),
        (["--budget-tokens", "0"], "budget_tokens: expected an integer"),
        (["--paths", "../elsewhere"], "leads outside the vault"),
    ],
)
def test_a_bad_flag_of_batch_mode_is_one_usage_error_before_stdin_is_read(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    flags: list[str],
    said: str,
) -> None:
    """The flags are every line's defaults: a bad one answered every line with the same
    error and exit 1; it is refused once, exit 2, as for one query, with stdin unread."""
    (tmp_path / "diary").mkdir()
    (tmp_path / "diary" / "2026-11-01.md").write_text("## 09:00\ncoffee\n", encoding="utf-8")
    lines = io.StringIO('{"q": "coffee"}\n{"q": "tea"}\n')
    monkeypatch.setattr(sys, "stdin", lines)
    assert main(["query", "--vault", str(tmp_path), *flags, "-"]) == 2
    out = capsys.readouterr()
    assert out.out == "" and out.err.count("\n") == 1 and said in out.err
    assert lines.tell() == 0, "stdin was not read"


def test_serve_given_one_folder_by_two_names_is_not_two_vaults(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``serve --vault $PWD/v v`` named one folder twice and was refused as two vaults."""
    from wikimem_watch.shells.commands import _same_folder

    (tmp_path / "v").mkdir()
    monkeypatch.chdir(tmp_path)
    assert _same_folder("v", tmp_path / "v") and _same_folder("./v/", str(tmp_path / "v"))
    assert not _same_folder("v", tmp_path) and not _same_folder("missing", tmp_path / "v")


def test_a_true_setting_from_env_or_file_can_be_turned_off_by_a_flag(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from wikimem_watch.shells.access import config_from_args

    monkeypatch.setenv("WIKIMEM_WATCH_POLL", "1")
    monkeypatch.setenv("WIKIMEM_WATCH_FOLLOW_EXTERNAL_SYMLINKS", "1")
    on = parse_args(["serve", str(tmp_path)])
    off = parse_args(["serve", str(tmp_path), "--no-poll", "--no-follow-external-symlinks"])
    for args in (on, off):
        args.vault = args.vault_pos
    assert config_from_args(on).poll and config_from_args(on).follow_external_symlinks
    assert not config_from_args(off).poll and not config_from_args(off).follow_external_symlinks


def test_a_query_of_several_words_needs_no_quotes() -> None:
    quoted = cli("query", "--vault", str(EXAMPLE), "--in-process", "--json", "half marathon")
    bare = cli("query", "--vault", str(EXAMPLE), "--in-process", "--json", "half", "marathon")
    assert bare.returncode == 0, bare.stderr
    assert json.loads(bare.stdout)["hits"] == json.loads(quoted.stdout)["hits"]


def test_a_query_of_tags_alone_needs_no_text_and_one_of_neither_is_refused() -> None:
    tagged = cli("query", "--vault", str(EXAMPLE), "--in-process", "--json", "--tags", "plants")
    assert tagged.returncode == 0, tagged.stderr
    assert json.loads(tagged.stdout)["hits"]
    neither = cli("query", "--vault", str(EXAMPLE), "--in-process")
    assert neither.returncode == 2 and "--tags" in neither.stderr


@pytest.mark.parametrize(
    "args",
    [
        ("query", "--vault", str(EXAMPLE), "-"),
        ("write", "diary", "--vault", "VAULT", "-"),
        ("write", "wiki", "--vault", "VAULT", "people", "Mia", "-"),
    ],
)
def test_reading_a_closed_stdin_is_one_line_of_error_not_a_traceback(
    tmp_path: Path, args: tuple[str, ...]
) -> None:
    import os

    vault = tmp_path / "v"
    vault.mkdir()
    argv = [a.replace("VAULT", str(vault)) for a in args]
    out = subprocess.run(
        [sys.executable, "-m", "wikimem_watch", *argv],
        capture_output=True,
        text=True,
        timeout=60,
        preexec_fn=lambda: os.close(0),  # `<&-`: Python's sys.stdin is None
    )
    assert out.returncode == 2, out.stderr
    assert out.stderr.startswith("wikimem-watch: stdin is closed")
    assert "Traceback" not in out.stderr
    assert list(vault.iterdir()) == []  # nothing written


def test_watch_changes_whose_daemon_ends_the_stream_says_so_and_exits_2(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A daemon that stops, or drops a subscriber more than 256 changes behind, just closes
    the connection: that ended the command with 0 and nothing said, the changes missed."""

    def answer_then_close(conn: socket.socket) -> None:
        request = json.loads(conn.makefile("rb").readline())
        result = {"subscription": "s1", "generation": 4}
        changed = {"subscription": "s1", "generation": 5, "added": ["a.md#x"]}
        conn.sendall(
            json.dumps({"jsonrpc": "2.0", "id": request["id"], "result": result}).encode()
            + b"\n"
            + json.dumps({"jsonrpc": "2.0", "method": "changed", "params": changed}).encode()
            + b"\n"
        )

    with scripted_daemon(answer_then_close) as path:
        code = main(["watch-changes", "--socket", str(path)])
    out = capsys.readouterr()
    assert [json.loads(x)["generation"] for x in out.out.splitlines()] == [5]
    assert code == 2
    assert "wikimem-watch: the daemon closed the subscription" in out.err
    assert "after generation 5" in out.err


@pytest.mark.parametrize(
    "argv",
    [
        ["write", "diary", "--vault", "", "hello"],
        ["serve", ""],
        ["serve", "--vault", ""],
        ["query", "--vault", str(EXAMPLE), "--cache-dir", "", "x"],
        ["status", "--socket", ""],
    ],
)
def test_an_empty_path_flag_is_refused_not_taken_for_the_working_directory(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """``--vault "$UNSET"`` was Path(""), the working directory: a write landed there."""
    with pytest.raises(SystemExit) as exited:
        parse_args(argv)
    assert exited.value.code == 2
    assert "an empty path" in capsys.readouterr().err


def test_with_stderr_closed_messages_go_nowhere_not_into_stdout_or_a_file(tmp_path: Path) -> None:
    """``2>&-``: "answering in-process" was printed to stdout ahead of the JSON (``sys.stderr``
    is None), and descriptor 2 was the first file the run opened, where log lines went."""
    vault = tmp_path / "v"
    (vault / "diary").mkdir(parents=True)
    (vault / "diary" / "2026-01-01.md").write_text("## 10:00\nhello\n", encoding="utf-8")
    closed = ["sh", "-c", 'exec "$@" 2>&-', "sh", sys.executable]
    out = subprocess.run(
        [*closed, "-m", "wikimem_watch", "query", "--vault", str(vault), "--json", "hello"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0
    assert json.loads(out.stdout)["hits"][0]["id"] == "diary/2026-01-01.md#10:00"
    probe = (
        "import os, sys; from wikimem_watch.shells.cli import main; main(['parse-time', 'today']);"
        "print(os.path.samestat(os.fstat(2), os.stat(os.devnull)), sys.stderr is not None)"
    )
    out = subprocess.run([*closed, "-c", probe], capture_output=True, text=True, timeout=60)
    assert out.stdout.splitlines()[-1] == "True True"
