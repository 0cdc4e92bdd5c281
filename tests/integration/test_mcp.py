"""The MCP command spoken to over stdio by the SDK's own client: every tool, a write then a
search that finds it, an error, through a running daemon and in-process (ADR-0017)."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from daemon_harness import DaemonProc, child_env

mcp = pytest.importorskip("mcp")
from mcp import Client  # noqa: E402
from mcp.client.stdio import StdioServerParameters  # noqa: E402

pytestmark = pytest.mark.timeout(90)

TOOLS = {
    "search",
    "list_days",
    "read_day",
    "read_note",
    "append_diary",
    "upsert_wiki",
    "delete_wiki",
    "journal",
    "status",
}


def session(vault: Path, *extra: str) -> StdioServerParameters:
    args = ["-m", "wikimem_watch", "mcp", "--vault", str(vault), *extra]
    return StdioServerParameters(command=sys.executable, args=args, env=child_env())


def run_tools(vault: Path, *extra: str) -> dict[str, Any]:
    """Call every tool once, in an order that writes before it reads back."""

    async def go() -> dict[str, Any]:
        out: dict[str, Any] = {}
        async with Client(session(vault, *extra)) as client:
            out["tools"] = {t.name for t in (await client.list_tools()).tools}
            calls: list[tuple[str, dict[str, object]]] = [
                ("append_diary", {"text": "kiwi tasting at the market", "date": "2026-07-20"}),
                ("search", {"query": "kiwi", "k": 3}),
                ("search", {"query": "sailing", "kinds": ["wiki"]}),
                ("list_days", {}),
                ("read_day", {"date": "2026-07-20"}),
                ("upsert_wiki", {"file": "people", "name": "Bo", "text": "Bo grows kiwis."}),
                ("read_note", {"path": "people"}),
                ("delete_wiki", {"file": "people", "name": "Bo"}),
                ("journal", {"limit": 10}),
                ("status", {}),
                ("read_day", {"date": "2026-13-40"}),
            ]
            for name, params in calls:
                result = await client.call_tool(name, params)
                key = f"{name}:{params.get('date', '')}" if name == "read_day" else name
                out.setdefault(key, []).append(result)
        return out

    return asyncio.run(go())


def check_answers(out: dict[str, Any]) -> None:
    assert out["tools"] == TOOLS
    written = out["append_diary"][0]
    assert not written.is_error and written.structured_content["path"] == "diary/2026-07-20.md"
    kiwi, sailing = out["search"]
    hits = kiwi.structured_content["hits"]
    assert hits and "kiwi" in hits[0]["text"] and "kiwi" in kiwi.content[0].text
    assert sailing.structured_content["hits"][0]["path"] == "wiki/people.md"
    days = out["list_days"][0].structured_content["days"]
    assert {"date": "2026-07-20", "entries": 2} in days
    assert len(out["read_day:2026-07-20"][0].structured_content["entries"]) == 2
    assert out["upsert_wiki"][0].structured_content["created"] is True
    note = out["read_note"][0].structured_content["entries"]
    assert any(e["heading"] == "Bo" for e in note)
    assert not out["delete_wiki"][0].is_error
    actions = [e["action"] for e in out["journal"][0].structured_content["entries"]]
    assert {"diary", "add", "remove"} <= set(actions)
    bad = out["read_day:2026-13-40"][0]
    assert bad.is_error and "date" in bad.content[0].text


def test_every_tool_through_a_running_daemon(
    vault: Path, start_daemon: Callable[..., DaemonProc]
) -> None:
    start_daemon(vault)
    out = run_tools(vault)
    check_answers(out)
    assert out["status"][0].structured_content["served_by"] == "daemon"


def test_every_tool_in_process_when_no_daemon_runs(vault: Path) -> None:
    out = run_tools(vault)
    check_answers(out)
    assert out["status"][0].structured_content["served_by"] == "in-process"


def test_a_write_a_daemon_took_and_dropped_is_not_made_again_in_process(vault: Path) -> None:
    """Only a daemon that cannot be reached hands the call to the in-process path: one that
    read the request and hung up may have made the write."""
    from tests.conftest import hanging_up_daemon
    from wikimem_watch.config import load_config
    from wikimem_watch.errors import DaemonUnavailable
    from wikimem_watch.shells.mcp import Vault

    params = {"text": "walked the dog", "date": "2026-01-01", "time": "10:00"}
    with hanging_up_daemon() as path, pytest.raises(DaemonUnavailable, match="may have been made"):
        Vault(load_config(vault, {"socket": str(path)})).call("append_diary", params)
    assert not (vault / "diary" / "2026-01-01.md").exists()


def test_a_diary_entry_is_filed_in_the_mcp_servers_own_time_zone(
    vault: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A daemon started with another TZ (a service manager's UTC) filed an entry the agent
    made "now" under the daemon's day and hour; the CLI already sent its own."""
    import time

    from wikimem_watch.config import load_config
    from wikimem_watch.shells.mcp import Vault
    from wikimem_watch.shells.mcp_tools import build_server

    sent: list[dict[str, object]] = []

    class Recorder(Vault):
        def call(self, method: str, params: dict[str, object]) -> Any:
            sent.append(params)
            return {"id": "x"}

    server = build_server(Recorder(load_config(vault)))
    monkeypatch.setenv("TZ", "Pacific/Kiritimati")  # UTC+14
    time.tzset()
    try:
        asyncio.run(server.call_tool("append_diary", {"text": "kites"}))
        asyncio.run(server.call_tool("append_diary", {"text": "old", "date": "2026-01-01"}))
    finally:
        monkeypatch.undo()
        time.tzset()
    now, back = sent
    assert str(now["ts"]).endswith("+14:00") and str(now["ts"])[11:16] == now["time"]
    assert str(back["ts"]).startswith("2026-01-01T") and str(back["ts"]).endswith("+14:00")


def test_concurrent_in_process_writes_are_all_kept(vault: Path) -> None:
    """With no daemon, the SDK ran simultaneous tool calls on worker threads, each with
    its own in-process writer: concurrent upserts to one file all said ok, some were lost."""
    from wikimem_watch.config import load_config
    from wikimem_watch.shells.mcp import Vault
    from wikimem_watch.shells.mcp_tools import build_server

    server = build_server(Vault(load_config(vault)))
    names = [f"P{i}" for i in range(12)]

    async def go() -> None:
        calls = (
            server.call_tool("upsert_wiki", {"file": "crowd", "name": n, "text": f"{n} came"})
            for n in names
        )
        await asyncio.gather(*calls)

    asyncio.run(go())
    text = (vault / "wiki" / "crowd.md").read_text(encoding="utf-8")
    assert sorted(line[3:] for line in text.splitlines() if line.startswith("## ")) == sorted(names)
