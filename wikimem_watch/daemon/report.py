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
        return {
            "state": state,
            "vault": str(config.vault),
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "version": __version__,
            "entries": {**counts, "total": sum(counts.values())},
            "files": len(engine.files),
            "skipped": [
                {"path": p, "reason": r}
                for p, r in sorted({**engine.skipped, **engine.linked_dirs}.items())
            ],
            "warnings": engine.warnings(),
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
