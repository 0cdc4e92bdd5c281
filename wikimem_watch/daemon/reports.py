"""What the daemon reports about itself: its "ready" line and known problems, ``status``,
``pending``, the HTTP endpoint's address and the vector side's face for the methods.

A mixin of :class:`~wikimem_watch.daemon.service.Daemon`, which owns the state; the methods
run on the server's threads and only read it.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from ..config import Config
from ..core.engine import Engine
from ..errors import ConfigError, WatchError
from .report import index_status
from .server import Server
from .watcher import ChangeQueue, Watcher

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

    from ..retrieval.query import VectorSignal
    from .http import HttpEndpoint

__all__ = ["UNRESOLVED_REFRESH_S", "DaemonReports"]

UNRESOLVED_REFRESH_S = 5.0


class DaemonReports:
    """``status`` and what it is made of, for the daemon's protocol methods."""

    engine: Engine
    config: Config
    state: str
    cache_problem: str | None
    socket_path: Path
    watcher: Watcher
    server: Server
    http: HttpEndpoint | None
    safety_rescan_s: float
    snapshot: dict[str, object]
    _changes: ChangeQueue
    _unresolved: tuple[int, list[dict[str, object]], float]
    _started_mono: float
    scan_files: int | None

    def _announce_ready(self, announce: Callable[[str, bool], None]) -> None:
        """Tell ``announce`` the daemon is ready (one line), then each problem it knows of
        (skipped files, vault warnings, config and cache problems), flagged as such."""
        counts = self.engine.counts()
        took = time.monotonic() - self._started_mono
        announce(
            f"ready: {self.config.vault} on {self.socket_path} — {len(self.engine.files)} files, "
            f"{counts['diary']} diary + {counts['wiki']} wiki entries, {self.watcher.kind} "
            f"watcher, {took:.2f}s" + (f"; HTTP on {self.http.url}" if self.http else ""),
            False,
        )
        problems = [f"skipped {p}: {r}" for p, r in sorted(self.engine.skipped.items())]
        problems += [f"skipped {p}: {r}" for p, r in sorted(self.engine.linked_dirs.items())]
        problems += [f"{p}: {w}" for p, ws in sorted(self.engine.warnings().items()) for w in ws]
        problems += [f"config: {w}" for w in self.config.warnings]
        if self.cache_problem:
            problems.append(f"cache: {self.cache_problem}")
        for line in problems:
            announce(line, True)

    def _http_status(self) -> dict[str, str]:
        from .http import token_path

        assert self.http is not None
        return {"url": self.http.url, "token_file": str(token_path(self.config))}

    def vector_signal(self) -> VectorSignal | None:
        return self.engine.vectors

    def embed(self, rebuild: bool) -> dict[str, object]:
        """Start filling (or, with ``rebuild``, redoing) the vector cache in the background."""
        if self.state == "scanning":  # a sync over part of the vault would drop the rest
            raise WatchError(
                "the daemon is still reading the vault (status: scanning); embed once it is ready"
            )
        if self.engine.vectors is None:
            raise ConfigError(
                "embeddings are off: serve with --embed local|http|hash "
                "(or set embed in config.toml)"
            )
        self.engine.sync_vectors(rebuild=rebuild)
        return self.engine.vectors.status()

    def pending(self) -> int:
        """Changes seen and not applied yet. Read in the order they flow (the watcher's,
        then the queue's and the one in hand together), so a change moving on meanwhile is
        counted twice at worst, never missed: ``check`` waits for 0."""
        return self.watcher.pending_count() + self._changes.pending()

    def _unresolved_links(self) -> list[dict[str, object]]:
        """Listing unresolved links builds the link map on first use (~0.1 s at 100k entries,
        under the lock; after that an edit costs its own links) and sorts them all: do it
        once ready, at most once per generation and per ``UNRESOLVED_REFRESH_S``."""
        gen, found, at = self._unresolved
        now = time.monotonic()
        stale = gen != self.engine.generation and (gen < 0 or now - at >= UNRESOLVED_REFRESH_S)
        if stale and self.state == "ready":
            found = self.engine.unresolved_links()
            self._unresolved = (self.engine.generation, found, now)
        return found

    def status(self) -> dict[str, object]:
        result = index_status(
            self.engine,
            self.config,
            state=self.state,
            cache_problem=self.cache_problem,
            unresolved=self._unresolved_links(),
        )
        result.update(
            socket=str(self.socket_path),
            pending=self.pending(),
            watcher=self.watcher.kind,
            uptime_s=round(time.monotonic() - self._started_mono, 3),
            connections=self.server.connection_count(),
            socket_limits=self.server.stats(),
            http=None if self.http is None else self._http_status(),
            safety_rescan_s=self.safety_rescan_s,
            snapshot=dict(self.snapshot),
            scan_files=self.scan_files if self.state == "scanning" else None,
        )
        return result
