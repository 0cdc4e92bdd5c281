"""What the command line prints (shells.output): the progress bar, status, results."""

from __future__ import annotations

import io
import re

import pytest

from wikimem_watch.shells.output import Progress, print_entries, print_result


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def drawn(stream: io.StringIO) -> list[tuple[int, int]]:
    return [(int(a), int(b)) for a, b in re.findall(r"(\d+)/(\d+)", stream.getvalue())]


def test_on_a_terminal_the_bar_redraws_in_place_and_never_goes_back() -> None:
    out = Terminal()
    bar = Progress(out)
    for pending in (120, 120, 88, 40, 40, 0):  # a daemon's readings, every 0.5 s
        bar.pending(pending)
    bar.finish()
    steps = drawn(out)
    assert steps == [(0, 120), (32, 120), (80, 120), (120, 120)]
    assert out.getvalue().count("\r") == len(steps) and out.getvalue().endswith("\n")


def test_the_total_is_the_work_given_and_grows_only_when_more_arrives() -> None:
    out = Terminal()
    bar = Progress(out)
    bar.pending(10)
    bar.pending(5)
    bar.pending(25)  # an edit queued 20 more while embedding
    bar.pending(0)
    assert drawn(out) == [(0, 10), (5, 10), (5, 30), (30, 30)]


def test_without_a_terminal_it_prints_plain_lines_with_the_last_one_complete() -> None:
    out = io.StringIO()
    bar = Progress(out)
    for done in range(0, 101, 10):
        bar.update(done, 100)
    bar.finish()
    text = out.getvalue()
    assert "\r" not in text and "#" not in text
    lines = text.splitlines()
    assert all(line.startswith("embedding: ") for line in lines)
    assert lines[-1] == "embedding: 100/100"
    done = [a for a, _ in drawn(out)]
    assert done == sorted(done)


def test_a_query_with_nothing_searchable_prints_why_not_just_no_results(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = print_result(
        {"hits": [], "time_range": None, "note": "the query is empty: nothing to search for"},
        as_json=False,
    )
    assert code == 1
    assert capsys.readouterr().out == "no results: the query is empty: nothing to search for\n"


def test_status_during_a_first_scan_says_how_many_files_are_read(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from wikimem_watch.shells.output import print_status

    status = {
        "state": "scanning",
        "vault": "/v",
        "pid": 1,
        "host": "h",
        "entries": {"diary": 5, "wiki": 1},
        "files": 40,
        "generation": 3,
        "unresolved_links": 0,
        "skipped": [],
        "warnings": {},
        "vectors": {"state": "off"},
        "scan_files": 1200,
    }
    print_status(status)
    assert "index    40 files" in capsys.readouterr().out
    print_status(status)
    assert "scan     1200 files to read before ready" in capsys.readouterr().out
    print_status({**status, "state": "ready", "scan_files": None})
    assert "scan " not in capsys.readouterr().out
    http = {"url": "http://127.0.0.1:8765", "token_file": "/run/t.http-token"}
    print_status({**status, "http": http})  # where the token is: what a 401 points to
    assert "http     http://127.0.0.1:8765  token in /run/t.http-token" in capsys.readouterr().out


def test_a_window_named_by_a_conversation_says_which(capsys: pytest.CaptureFixture[str]) -> None:
    gate = {"start": "2026-11-24", "end": "2026-11-24", "source": "parsed", "entries": 2}
    result = {"q": "上次我们聊了什么", "hits": [], "note": None, "listing": True, "cut": False}
    print_result({**result, "time_range": {**gate, "session": "last"}}, as_json=False)
    print_result({**result, "time_range": {**gate, "session": None}}, as_json=False)
    lines = capsys.readouterr().out.splitlines()
    first, second = (line for line in lines if line.startswith("window"))
    assert first == "window 2026-11-24 .. 2026-11-24 [parsed: the last conversation] (2 entries)"
    assert second == "window 2026-11-24 .. 2026-11-24 [parsed] (2 entries)"


def test_day_and_note_print_each_entry_whole(capsys: pytest.CaptureFixture[str]) -> None:
    long = "a long entry " * 20
    entry = {"date": "2026-07-20", "time": "08:00", "path": "diary/2026-07-20.md", "line": 3}
    print_entries([{**entry, "heading": "08:00", "text": f"{long.strip()}\nsecond line"}])
    out = capsys.readouterr().out.splitlines()
    assert out == [
        "2026-07-20 08:00  diary/2026-07-20.md:3  08:00",
        f"        {long.strip()}",
        "        second line",
    ]


def test_log_lines_are_dropped_not_waited_for_when_stderr_is_a_full_pipe() -> None:
    """A daemon whose stderr is a pipe nobody reads must not stop at its next log line."""
    import logging
    import os

    from wikimem_watch.shells.output import stderr_lines

    handler = stderr_lines()
    saved = os.dup(2)
    r, w = os.pipe()
    try:
        os.set_blocking(w, False)
        try:
            while True:
                os.write(w, b"x" * 65536)
        except BlockingIOError:
            pass  # the pipe is full
        os.set_blocking(w, True)
        os.dup2(w, 2)
        record = logging.LogRecord("t", logging.WARNING, __file__, 1, "a warning", None, None)
        for _ in range(100):
            handler.emit(record)  # would block for good on a full pipe
        assert handler.dropped == 100  # type: ignore[attr-defined]
    finally:
        os.dup2(saved, 2)
        for fd in (saved, r, w):
            os.close(fd)


def test_a_long_hit_shows_the_part_around_its_first_matched_term() -> None:
    from wikimem_watch.shells.output import SNIPPET_CHARS, snippet

    text = "Basil, mint and thyme on the sill. " * 6 + "Then the kayak on the river, cold."
    shown = snippet(text, ["kayak"])
    assert "kayak" in shown and shown.startswith("…") and len(shown) <= SNIPPET_CHARS + 1
    assert snippet(text, ["basil"]) == text[:SNIPPET_CHARS] + "…"  # at the start: the start
    assert snippet(text, []) == text[:SNIPPET_CHARS] + "…"
    assert snippet("short", ["x"]) == "short"


def test_a_notes_control_characters_are_shown_escaped_never_sent_to_the_terminal(
    capsys: pytest.CaptureFixture[str],
) -> None:
    hit = {
        "id": "wiki/we\nird.md#evil",
        "path": "wiki/we\nird.md",
        "line": 4,
        "heading": "evil \x1b[31mRED\x1b[0m \u202eheading",
        "text": "zebra \x1b]0;owned\x07 with \x1b[2J and\r a bell\x07",
        "score": 1.0,
        "matched_terms": ["zebra"],
        "in_window": None,
        "linked": [{"path": "a\x1b[2Jb.md", "line": 1, "heading": "x\x9by", "text": "ok"}],
    }
    result = {"hits": [hit], "time_range": None, "note": None, "cut": False}
    assert print_result(result, as_json=False) == 0
    out = capsys.readouterr().out
    assert not re.search("[\x00-\x09\x0b-\x1f\x7f-\x9f\u202e]", out)
    lines = out.splitlines()
    assert len(lines) == 4  # a row and its snippet for the hit and for its context
    assert (
        lines[0]
        == " 1.000  -                 wiki/we\\nird.md:4  evil \\x1b[31mRED\\x1b[0m \\u202eheading"
    )
    assert lines[1] == "        zebra \\x1b]0;owned\\x07 with \\x1b[2J and a bell\\x07"
    assert "a\\x1b[2Jb.md:1  x\\x9by" in lines[2]
    print_entries([{**hit, "date": None, "time": None}])
    assert not re.search("[\x00-\x09\x0b-\x1f\x7f-\x9f\u202e]", capsys.readouterr().out)


def test_a_cut_listing_of_tagged_entries_says_there_are_more_not_of_question_mark(
    capsys: pytest.CaptureFixture[str],
) -> None:
    hit = {"path": "diary/2026-11-11.md", "line": 1, "heading": "09:00", "text": "plants"}
    hit |= {"date": "2026-11-11", "time": "09:00", "score": None, "in_window": None}
    print_result({"hits": [hit], "time_range": None, "note": None, "cut": True}, as_json=False)
    assert (
        capsys.readouterr().out.splitlines()[-1]
        == "(first 1; there are more: raise -k to see them)"
    )
    gate = {"start": "2026-11-02", "end": "2026-11-08", "source": "parsed", "entries": 6}
    print_result({"hits": [hit], "time_range": gate, "note": None, "cut": True}, as_json=False)
    assert capsys.readouterr().out.splitlines()[-1] == "(first 1 of 6)"


def test_status_shows_a_vault_paths_link_targets_and_reasons_escaped_never_obeyed(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from wikimem_watch.shells.output import print_status

    evil = "wiki/a\x1b[2Jb\nc\u202e.md"  # a synced vault names its files
    status = {
        "state": "ready",
        "vault": "/v",
        "pid": 1,
        "host": "h",
        "entries": {"diary": 0, "wiki": 1},
        "files": 3,
        "generation": 1,
        "unresolved_links": 1,
        "unresolved": [{"target": "x\x1b]0;owned\x07", "path": evil, "line": 2}],
        "skipped": [{"path": evil, "reason": "symlink to /t/\x1b[31mred, outside the vault"}],
        "warnings": {evil: ["invalid UTF-8 at byte 3; bad bytes replaced"]},
        "config_warnings": ["/v/.wikimem/config.toml: ignored: \x1b[2J"],
        "vectors": {"state": "off"},
    }
    print_status(status)
    out = capsys.readouterr().out
    assert not re.search("[\x00-\x09\x0b-\x1f\x7f-\x9f\u202e]", out)
    assert "         [[x\\x1b]0;owned\\x07]] in wiki/a\\x1b[2Jb\\nc\\u202e.md:2" in out
    assert "skipped  wiki/a\\x1b[2Jb\\nc\\u202e.md: symlink to /t/\\x1b[31mred" in out
    assert "warning  wiki/a\\x1b[2Jb\\nc\\u202e.md: invalid UTF-8" in out
    assert len(out.splitlines()) == 8  # one line each: a newline in a name breaks no row
