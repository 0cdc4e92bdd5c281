"""The ``Config`` record: everything the engine and the daemon read, built by
:func:`load_config` from the values :mod:`wikimem_watch.settings` resolves (the sources,
their order and the trust boundary between the user and the vault are described there).

A command that only talks to a running daemon never imports this module: it needs the
daemon's location alone (``settings.locate``), and importing ``dataclasses`` and building
this 37-field class would cost it about 12 ms, more than all else such a run adds to a bare
socket client (ADR-0012).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from .settings import (
    CACHE_DIRNAME,
    DEFAULT_API_KEY_ENV,
    EMBED_KINDS,
    VAULT_SETTABLE,
    cache_dir_problem,
    resolve_settings,
    settable_fields,
    user_cache_home,
    user_config_path,
)

__all__ = [
    "CACHE_DIRNAME",
    "EMBED_KINDS",
    "VAULT_SETTABLE",
    "Config",
    "cache_dir_problem",
    "load_config",
    "settable_fields",
    "user_cache_home",
    "user_config_path",
]


@dataclass(frozen=True, slots=True)
class Config:
    """Everything the engine and daemon read. Flags reuse these field names."""

    vault: Path
    cache_dir: Path | None = None  # default <vault>/.wikimem
    socket: Path | None = None  # default derived from the cache dir (see daemon.socket_path)
    include: tuple[str, ...] = ("*",)
    exclude: tuple[str, ...] = ()
    k1: float = 1.2
    b: float = 0.4
    stop_words: bool = True
    stem: bool = True
    heading_weight: int = 3  # ADR-0009
    question_context: bool = True  # ADR-0009: diary entries also read the question before them
    jieba: bool = False
    weight_bm25: float = 1.0
    weight_vector: float = 1.5  # ADR-0008
    weight_recency: float = 0.05
    weight_previous: float = 0.3  # ADR-0009
    weight_question: float = 0.6  # ADR-0009 §10
    weight_information: float = 0.3  # ADR-0009 §11
    half_life_days: float = 90.0
    debounce_ms: int = 25
    poll: bool = False
    embed: str = "none"  # none | local | http | hash
    embed_endpoint: str | None = None  # a name (or URL) from the user's [endpoints]
    embed_url: str | None = None
    embed_model: str | None = None
    embed_api_key_env: str = DEFAULT_API_KEY_ENV
    embed_batch: int = 32
    embed_peer_grace_s: float = 3.0  # wait for another machine's vectors (ADR-0005); 0: never
    max_request_bytes: int = 1024 * 1024
    follow_external_symlinks: bool = False  # ADR-0011: the user's decision, never the vault's
    max_buffered_bytes: int = 32 * 1024 * 1024  # unfinished lines across all connections
    max_connections: int = 256
    idle_timeout_s: float = 60.0  # 0: never close an idle connection
    http: str | None = None  # HOST:PORT of the HTTP endpoint (ADR-0013); None: socket only
    http_allow_remote: bool = False  # a non-loopback HTTP address is refused without it
    http_cors_origins: tuple[str, ...] = ()  # browser origins allowed to call the endpoint
    snapshot: bool = True  # ADR-0015: keep an index snapshot so a start re-reads nothing
    snapshot_dir: Path | None = None  # default $XDG_CACHE_HOME/wikimem-watch (per machine)
    # Not settings: what the resolution ignored, and why (shown by ``status``), and whether
    # ``embed`` came from the host's last daemon (``load_config(remembered=...)``).
    warnings: tuple[str, ...] = field(default=(), compare=False)
    embed_remembered: bool = field(default=False, compare=False)

    @property
    def cache_path(self) -> Path:
        return self.cache_dir if self.cache_dir is not None else self.vault / CACHE_DIRNAME

    @property
    def snapshot_path(self) -> Path | None:
        """The index snapshot of this vault (ADR-0015), or ``None`` when switched off.

        Per machine and outside the vault by default: file mtimes differ between machines,
        and a synced vault must not hand the daemon a snapshot to trust.
        """
        if not self.snapshot:
            return None
        import hashlib  # here: a client run that never needs the path skips the import

        base = self.snapshot_dir if self.snapshot_dir is not None else user_cache_home()
        key = hashlib.sha256(os.fsencode(self.vault)).hexdigest()[:16]
        return base / key / "index.snapshot"


def load_config(
    vault: Path | str,
    overrides: Mapping[str, object] | None = None,
    *,
    remembered: Callable[[Path], str | None] | None = None,
) -> Config:
    """Resolve the configuration for ``vault``; ``overrides`` are flags (``None`` = not given).

    ``remembered`` (cache dir → embedder kind or None) supplies ``embed`` when no source
    sets it: in-process runs use the embedder this host's last daemon used.
    """
    root, values, warnings, recalled = resolve_settings(vault, overrides, remembered=remembered)
    return Config(
        vault=root.resolve(),
        **values,  # type: ignore[arg-type]
        warnings=tuple(warnings),
        embed_remembered=recalled,
    )
