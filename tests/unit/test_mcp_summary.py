"""The MCP tools' short text beside the structured result (``shells.mcp.summary``)."""

from __future__ import annotations

from wikimem_watch.shells.mcp import summary


def _result(fallback: str | None, entries: int) -> dict[str, object]:
    gate = {
        "start": "2026-07-20",
        "end": "2026-07-20",
        "source": "parsed",
        "entries": entries,
        "fallback": fallback,
        "widened_days": 0,
    }
    hit = {"date": "2026-07-18", "time": "09:00", "path": "diary/2026-07-18.md", "line": 3,
           "heading": "09:00", "text": "kiwi tasting"}  # fmt: skip
    return {"time_range": gate, "widened": False, "hits": [hit]}


def test_a_window_that_was_not_applied_is_said_so_in_the_mcp_text() -> None:
    text = summary("query", _result("empty", 0))
    assert text.splitlines()[0] == (
        "window 2026-07-20 .. 2026-07-20 [parsed] (no entries: not applied)"
    )


def test_an_applied_window_names_its_entries_in_the_mcp_text() -> None:
    text = summary("query", _result(None, 2))
    assert text.splitlines()[0] == "window 2026-07-20 .. 2026-07-20 [parsed] (2 entries)"
    assert text.splitlines()[1].startswith("- 2026-07-18 09:00 diary/2026-07-18.md:3 09:00")
