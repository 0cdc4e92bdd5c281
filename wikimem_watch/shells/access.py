"""How a command reaches the index: the vault's running daemon, or an in-process engine.

Talking to a daemon needs only the standard library, the client and the protocol: the
engine, numpy, markdown-it and watchdog are imported inside the in-process paths
(``open_engine``, ``local_answer``), so a command that reaches a running daemon starts in
tens of milliseconds (ADR-0012).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from ..daemon.runtime import remembered_embedder
from ..errors import ConfigError, DaemonUnavailable
from ..settings import VaultLocation, locate
from .client import Client, connect
from .output import use_logging

TYPE_CHECKING = False  # `typing` costs a client run milliseconds; type checkers see True
if TYPE_CHECKING:
    from typing import Any

    from ..config import Config
    from ..core.engine import ApplyStats, Engine
    from ..core.snapshot import ToldApply

FLAG_FIELDS = (
    "cache_dir",
    "include",
    "exclude",
    "embed",
    "embed_url",
    "embed_model",
    "socket",
    "follow_external_symlinks",
    "idle_timeout_s",
    "max_connections",
    "max_request_bytes",
    "max_buffered_bytes",
    "http",
    "http_allow_remote",
    "http_cors_origins",
    "poll",
    "debounce_ms",
)


def config_from_args(args: argparse.Namespace, *, in_process: bool = False) -> Config:
    """The configuration the flags, environment and files give. ``in_process``: when no
    source names an embedder, use the one this host's last daemon used (local/hash only)."""
    from ..config import load_config  # not on the way to a running daemon: see locate_args

    if args.vault is None:
        raise ConfigError("--vault DIR is required")
    remembered = remembered_embedder if in_process else None
    return load_config(args.vault, _flags(args), remembered=remembered)


def locate_args(args: argparse.Namespace) -> VaultLocation:
    """Where the vault's daemon is found, resolved from the same sources with the same
    checks as :func:`config_from_args`, without building a ``Config`` (ADR-0012)."""
    if args.vault is None:
        raise ConfigError("--vault DIR is required")
    return locate(args.vault, _flags(args))


def _flags(args: argparse.Namespace) -> dict[str, object]:
    return {name: getattr(args, name, None) for name in FLAG_FIELDS}


def open_engine(
    config: Config, *, vectors: bool = False, scan: bool = True, snapshot: bool = True
) -> Engine:
    """An in-process engine: from the index snapshot plus the files changed since
    (ADR-0015), or with ``snapshot=False`` a fresh scan that trusts no cache (``check``);
    with ``vectors``, the configured embeddings component reads the vector cache as it is
    (in-process queries never embed the vault).

    Per-file parse warnings are not printed here: the daemon printed them when it started,
    ``status`` lists them, and ``check --verbose`` prints them.
    """
    import logging

    from ..core.engine import Engine
    from ..core.snapshot import scan_with_snapshot

    use_logging()
    engine = Engine(config)
    if scan:
        quiet = logging.getLogger("wikimem_watch.core.prepare")
        before = quiet.level
        quiet.setLevel(max(logging.ERROR, before))
        try:
            scan_with_snapshot(engine, told=_told(engine)) if snapshot else engine.scan()
        finally:
            quiet.setLevel(before)
    if vectors and config.embed != "none":  # the vector side loads only when configured
        from ..vectors.service import open_vectors

        engine.vectors = open_vectors(config)
    return engine


def _told(engine: Engine) -> ToldApply:
    """How a run that writes a new snapshot applies what changed since the last: journaled
    (ADR-0016), as the daemon's start from the old snapshot would have, for the next start
    compares from the new one and sees none of it. The journal and the change feed load only
    then: most one-shot runs start from a snapshot they do not rewrite."""

    def told(paths: list[str], known: bool) -> ApplyStats:
        from ..daemon.journal import Journal
        from ..daemon.subscriptions import ChangeFeed

        journal = Journal(engine.config.vault)
        if known:
            return ChangeFeed(engine, journal).apply(paths, external=True)
        journal.unknown_changes()  # a cold scan: what changed before it is not known
        return engine.apply(paths)

    return told


def say_in_process(args: argparse.Namespace, config: Config) -> None:
    """One line on stderr: no daemon answered, so this command runs in-process."""
    if args.in_process:
        return
    line = f"wikimem-watch: no daemon running for {args.vault}; answering in-process"
    if config.socket is not None:  # the one asked for (--socket, WIKIMEM_SOCK, config): name it
        line = (
            f"wikimem-watch: no daemon is listening on {str(config.socket)!r}; answering in-process"
        )
    if config.embed_remembered:
        line += f" (with the {config.embed!r} embedder this host's last daemon used)"
    print(line, file=sys.stderr)


def connect_args(args: argparse.Namespace) -> Client:
    """A client for ``--socket`` (or WIKIMEM_SOCK), else for ``--vault``'s daemon."""
    if args.socket is not None:
        client = Client(args.socket)
        return client if args.vault is None else _serving(client, Path(args.vault), "--socket")
    if args.vault is None:
        env = os.environ.get("WIKIMEM_SOCK")
        if env:
            return Client(Path(env).expanduser())
        raise ConfigError("give --vault DIR (or --socket PATH) to reach a daemon")
    where = locate_args(args)
    try:
        client = connect(where)
    except DaemonUnavailable:
        raise DaemonUnavailable(
            f"no daemon is running for vault {str(where.vault)!r} "
            f"(start one with: wikimem-watch serve {where.vault})"
        ) from None
    # A socket named by WIKIMEM_SOCK or a config file may be another vault's daemon.
    return client if where.socket is None else _serving(client, where.vault, "the socket")


def _serving(client: Client, vault: Path, named_by: str) -> Client:
    """``client``, once its daemon says it serves ``vault`` (a socket the user named may be
    another vault's daemon, and a write through it would land in that vault)."""
    try:
        served = obj(client.call("hello")).get("vault")
    except DaemonUnavailable as exc:  # it is there but did not answer: never write beside it
        client.close()
        raise ConfigError(
            f"the daemon on {named_by} {str(client.path)!r} did not answer ({exc.message}); "
            "nothing was done"
        ) from None
    if isinstance(served, str) and os.path.realpath(served) != os.path.realpath(vault):
        client.close()
        raise ConfigError(
            f"the daemon on {named_by} {str(client.path)!r} serves {served!r}, not "
            f"--vault {str(vault)!r} (unset WIKIMEM_SOCK, or give the socket of this vault)"
        )
    return client


def daemon_or_none(args: argparse.Namespace) -> Client | None:
    """The vault's daemon, or None when none runs and the command can work in-process."""
    if getattr(args, "in_process", False):
        return None
    try:
        return connect_args(args)
    except DaemonUnavailable:
        if args.vault is None:
            raise
        return None


def call(
    args: argparse.Namespace, method: str, params: dict[str, object] | None = None
) -> dict[str, Any]:
    """One call to the daemon (DaemonUnavailable when none runs)."""
    with connect_args(args) as client:
        return obj(client.call(method, params))


def answer(args: argparse.Namespace, method: str, params: dict[str, object]) -> dict[str, Any]:
    """The socket method's result: from the daemon when one runs, else the same method run
    in-process over a fresh scan (said once on stderr)."""
    client = daemon_or_none(args)
    if client is not None:
        with client:
            return obj(client.call(method, params))
    config = config_from_args(args, in_process=True)
    from .inprocess import local_answer

    result = obj(local_answer(config, method, params))
    say_in_process(args, config)  # after: a request refused is told without it
    return result


def obj(value: object) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise DaemonUnavailable(f"the daemon sent {type(value).__name__} where an object belongs")
    return value
