"""The socket's methods, answered in-process when no daemon runs (``days``, ``status``, ...).

A :class:`LocalService` is the daemon's face (``daemon.methods.Service``) over an engine
that scanned the vault just now, so ``days``, ``day``, ``note``, ``links``, ``status`` and
``reindex --dry-run`` print exactly the objects the socket answers. Imported only by the
in-process paths: it loads the engine (numpy, markdown-it).
"""

from __future__ import annotations

from ..config import Config, cache_dir_problem
from ..core.engine import Engine
from ..core.plan import plan_scan
from ..daemon.methods import dispatch
from ..daemon.report import index_status
from ..errors import ConfigError, DaemonUnavailable
from ..retrieval.query import VectorSignal
from .access import open_engine

NEEDS_NO_SCAN = frozenset(  # a dry run plans against an empty index; writes need no index
    {"reindex", "append_diary", "upsert_wiki", "delete_wiki", "journal"}
)


class LocalService:
    """What the methods need from a daemon, over an in-process engine (no socket, no
    watcher, nothing written)."""

    def __init__(self, config: Config, engine: Engine) -> None:
        from ..daemon.vault_writer import VaultWriter

        self.config = config
        self.engine = engine
        # The write methods find it here, as on the daemon; what it writes is not indexed
        # (there is no index to keep), the next scan reads it.
        self.writer = VaultWriter(config.vault)

    def status(self) -> dict[str, object]:
        return index_status(
            self.engine,
            self.config,
            state="in-process",
            cache_problem=cache_dir_problem(self.config),
            unresolved=self.engine.unresolved_links(),
        )

    def reindex(self, dry_run: bool = False) -> dict[str, object]:
        if not dry_run:
            raise DaemonUnavailable(
                f"no daemon is running for {str(self.config.vault)!r}: there is no index to "
                "rescan (--dry-run shows what a scan would index)"
            )
        return plan_scan(self.engine)

    def request_stop(self) -> None:
        """Nothing to stop in-process."""

    def vector_signal(self) -> VectorSignal | None:
        return self.engine.vectors

    def embed(self, rebuild: bool) -> dict[str, object]:
        raise ConfigError("in-process embedding is the embed command's own path")


def local_answer(config: Config, method: str, params: dict[str, object]) -> object:
    """``method`` with ``params``, answered as the daemon would, from a fresh scan."""
    engine = open_engine(config, vectors=method == "status", scan=method not in NEEDS_NO_SCAN)
    return dispatch(LocalService(config, engine), method, params)
