"""The MCP tools (ADR-0017): imported only by ``wikimem-watch mcp``, with the SDK.

Each tool is one method call on :class:`~.mcp.Vault` (the daemon, else in-process); the
descriptions teach an agent the vault's design (diary for what happened, wiki for what is
true now, time words or an explicit ``time_range`` for when).
"""

from __future__ import annotations

from collections.abc import Mapping

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, TextContent

from ..errors import WatchError
from .mcp import INSTRUCTIONS, Vault, summary
from .writing import local_when


def build_server(vault: Vault) -> MCPServer:
    """The MCP server with one tool per method."""
    server = MCPServer(name="wikimem-watch", instructions=INSTRUCTIONS)

    def run(method: str, params: Mapping[str, object]) -> CallToolResult:
        try:
            result = vault.call(method, dict(params))
        except WatchError as exc:
            raise ToolError(exc.message) from None
        structured = result if isinstance(result, dict) else {"result": result}
        return CallToolResult(
            content=[TextContent(type="text", text=summary(method, result))],
            structured_content=structured,
        )

    tool = server.tool

    @tool(description="Search the vault (BM25, plus vectors when the daemon has them). Time "
          "words in the query gate diary entries to that time; pass time_range "
          "['YYYY-MM-DD','YYYY-MM-DD'] when the time is vague or anchored on an event. "
          "kinds: ['diary'] for what happened, ['wiki'] for what is true now.")  # fmt: skip
    def search(
        query: str,
        k: int = 10,
        time_range: list[str] | str | None = None,
        kinds: list[str] | None = None,
        tags: list[str] | None = None,
    ) -> CallToolResult:
        params = {"q": query, "k": k, "time_range": time_range, "kinds": kinds, "tags": tags}
        return run("query", params)

    @tool(description="Dates that have diary entries, with counts (start/end: YYYY-MM-DD).")
    def list_days(start: str | None = None, end: str | None = None) -> CallToolResult:
        return run("days", {"start": start, "end": end})

    @tool(description="Every diary entry of one date (YYYY-MM-DD), in time order.")
    def read_day(date: str) -> CallToolResult:
        return run("day", {"date": date})

    @tool(description="Every entry of one note: 'wiki/people.md', 'wiki/people' or 'people'.")
    def read_note(path: str) -> CallToolResult:
        return run("note", {"path": path})

    @tool(description="Record what happened: a diary entry (a '## HH:MM' section of "
          "diary/DATE.md), at the given date and time or now. owner/source: who and which "
          "conversation. Use it for events; put lasting facts in the wiki.")  # fmt: skip
    def append_diary(
        text: str,
        date: str | None = None,
        time: str | None = None,
        owner: str | None = None,
        source: str | None = None,
    ) -> CallToolResult:
        params: dict[str, object] = {"text": text, "date": date, "time": time}
        params.update(owner=owner, source=source)
        # This process's zone, as the CLI does: a daemon started with another TZ (a service
        # manager's UTC) would file "now" under its own day and hour.
        params.update(local_when(date, time, None))
        return run("append_diary", params)

    @tool(description="Record what is true now: replace (or add) the item `name` in "
          "wiki/<file>.md (file: a lowercase slug such as 'people'). Use it for facts that "
          "change; the diary keeps the history.")  # fmt: skip
    def upsert_wiki(
        file: str, name: str, text: str, owner: str | None = None, source: str | None = None
    ) -> CallToolResult:
        params = {"file": file, "name": name, "text": text, "owner": owner, "source": source}
        return run("upsert_wiki", params)

    @tool(description="Remove the item `name` from wiki/<file>.md. owner/source: who and "
          "which conversation, for the journal.")  # fmt: skip
    def delete_wiki(
        file: str, name: str, owner: str | None = None, source: str | None = None
    ) -> CallToolResult:
        return run("delete_wiki", {"file": file, "name": name, "owner": owner, "source": source})

    @tool(description="Recent writes and external edits, oldest first; pass the reply's "
          "cursor as `since` to read on.")  # fmt: skip
    def journal(since: int | str | None = None, limit: int = 50) -> CallToolResult:
        return run("journal", {"since": since, "limit": limit})

    @tool(description="The index: counts, skipped files, warnings; says whether a daemon "
          "serves the vault or this tool answers in-process.")  # fmt: skip
    def status() -> CallToolResult:
        result = run("status", {})
        if isinstance(result.structured_content, dict):
            result.structured_content["served_by"] = vault.where
        return result

    return server
