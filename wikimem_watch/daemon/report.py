"""The ``status`` object: what the index holds, shared by the daemon and in-process runs.

The daemon adds what only a running daemon has (its socket, watcher, pending changes,
connections); an in-process run (``status`` with no daemon) answers the same shape with
``state: "in-process"`` and without those fields (docs/protocol.md).
"""

from __future__ import annotations

import os
import socket

from .. import __version__
from ..config import Config
from ..core.engine import Engine

UNRESOLVED_SHOWN = 20  # status lists this many unresolved links (all are counted)
# ... and this many skipped and warned files: a vault of 1,000 binary or mis-encoded notes
# made ``status`` (and the MCP tool's answer) 150 kB, one line per file.
SKIPPED_SHOWN = 20
WARNED_SHOWN = 20


def index_status(
    engine: Engine,
    config: Config,
    *,
    state: str,
    cache_problem: str | None,
    unresolved: list[dict[str, object]],
) -> dict[str, object]:
    """The part of ``status`` that describes the index, the vault and its caches."""
    with engine.lock:
        counts = engine.counts()
        skipped = sorted(engine.left_out().items())
        warned = sorted(engine.warnings().items())
        return {
            "state": state,
            "vault": str(config.vault),
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "version": __version__,
            "entries": {**counts, "total": sum(counts.values())},
            "files": len(engine.files),
            "skipped_files": len(skipped),
            "skipped": [{"path": p, "reason": r} for p, r in skipped[:SKIPPED_SHOWN]],
            "warned_files": len(warned),
            "warnings": dict(warned[:WARNED_SHOWN]),
            "config_warnings": list(config.warnings),
            "cache": {
                "path": str(config.cache_path),
                "usable": cache_problem is None,
                "problem": cache_problem,
            },
            "unresolved_links": len(unresolved),
            "unresolved": unresolved[:UNRESOLVED_SHOWN],
            "generation": engine.generation,
            "last_change_at": engine.last_change_at,
            "digest": engine.digest(),
            "embed": config.embed,
            "vectors": engine.vectors.status() if engine.vectors is not None else {"state": "off"},
        }
