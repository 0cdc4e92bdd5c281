"""The MCP shell: the vault's methods as Model Context Protocol tools, over stdio (ADR-0017).

``wikimem-watch mcp --vault DIR`` is a thin skin: every tool is one call of a socket method
(``query``, ``days``, ``day``, ``note``, ``append_diary``, ``upsert_wiki``, ``delete_wiki``,
``journal``, ``status``) on the vault's running daemon, or, when none runs, the same method
answered in-process (``shells.inprocess``). Results carry the method's JSON as structured
content plus a short readable text; a bad argument is a tool error with the socket's message.
Needs the ``[mcp]`` extra (the official SDK), imported only by this command.
"""

from __future__ import annotations

import argparse
import json
import sys

from ..config import Config
from ..errors import ConfigError, DaemonUnavailable
from .access import config_from_args
from .client import call_sent, connect

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

INSTRUCTIONS = """\
A memory vault of Markdown notes kept by a person and their AI companion.
What happened goes in the diary (append_diary: one dated entry per event, in the person's
words); what is true now goes in the wiki (upsert_wiki: one item per fact, replaced when it
changes). To recall, search: time words in the query ("上周三", "last week", "May 4th",
"yesterday evening") gate the diary to that time by themselves. When the time is vague or
anchored on an event ("the day we last argued"), look the event up first, then pass its dates
as time_range. read_day and read_note return whole days and notes."""


class Vault:
    """One vault's methods: through its daemon when one runs, else in-process."""

    def __init__(self, config: Config) -> None:
        self.config = config
        self.where = "daemon"

    def call(self, method: str, params: dict[str, object]) -> Any:
        """In-process only when no daemon takes the connection: one that took the request
        and failed to answer may have made a write, which must not be made again."""
        params = {k: v for k, v in params.items() if v is not None}
        try:
            client = connect(self.config)
        except DaemonUnavailable:
            from .inprocess import local_answer

            self.where = "in-process"  # its writes take turns on the vault lock (ADR-0016)
            return local_answer(self.config, method, params)
        with client:
            self.where = "daemon"
            return call_sent(client, method, params)


def _hit_line(hit: dict[str, Any]) -> str:
    when = " ".join(str(x) for x in (hit.get("date"), hit.get("time")) if x) or "-"
    text = " ".join(str(hit.get("text", "")).split())
    return f"- {when} {hit['path']}:{hit['line']} {hit['heading']}: {text[:160]}"


def summary(method: str, result: Any) -> str:
    """A short readable text beside the structured result."""
    if method == "query":
        from .output import window_line  # as the CLI's table says it, "not applied" too

        gate = result.get("time_range")
        head = window_line(gate, result) + "\n" if gate else ""
        hits = result.get("hits", [])
        return head + ("\n".join(_hit_line(h) for h in hits) if hits else "no results")
    if method in ("day", "note"):
        entries = result.get("entries", [])
        return "\n".join(_hit_line(e) for e in entries) if entries else "no entries"
    if method == "days":
        return ", ".join(f"{d['date']} ({d['entries']})" for d in result.get("days", []))
    return json.dumps(result, ensure_ascii=False)[:2000]


def mcp_command(args: argparse.Namespace) -> int:
    """Serve the vault's tools over stdio until the client closes it."""
    try:
        import mcp  # noqa: F401 - the optional extra
    except ImportError:
        raise ConfigError(
            "the MCP server needs the [mcp] extra: pip install 'wikimem-watch[mcp]' "
            "(in a clone: pip install -e '.[mcp]')"
        ) from None
    from .output import use_logging

    use_logging()
    from .mcp_tools import build_server

    vault = Vault(config_from_args(args))
    print(f"wikimem-watch: MCP tools for {vault.config.vault} on stdio", file=sys.stderr)
    build_server(vault).run("stdio")
    return 0
