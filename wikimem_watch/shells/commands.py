"""The commands that own a process or the caches: ``serve``, ``stop``, ``check``,
``embed`` and ``parse-time``. The reading commands (``query``, ``days``, ``status``, ...)
are in ``reading``; how a command reaches a daemon or an engine is in ``access``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import sys
import time
from pathlib import Path

from ..errors import BadRequest, ConfigError, DaemonUnavailable
from .access import config_from_args, connect_args, daemon_or_none, obj, open_engine
from .output import EXIT_EMPTY, EXIT_OK, Progress, print_vectors, shown, use_logging

TYPE_CHECKING = False  # `typing` costs a client run milliseconds; type checkers see True
if TYPE_CHECKING:
    from typing import Any

    from ..config import Config
    from ..core.engine import Engine


def serve_command(args: argparse.Namespace) -> int:
    from ..daemon.service import Daemon

    use_logging()
    vault = args.vault_pos or args.vault
    if vault is None:
        raise ConfigError("serve needs a vault: wikimem-watch serve VAULT")
    if args.vault_pos and args.vault and not _same_folder(args.vault_pos, args.vault):
        raise ConfigError(f"two vaults given: {args.vault_pos} and {args.vault}")
    args.vault = Path(vault)
    rescan_s = args.safety_rescan_s
    if not (math.isfinite(rescan_s) and 0 <= rescan_s <= 86_400):
        raise ConfigError(f"--safety-rescan-s {rescan_s!r}: expected seconds in [0, 86400]")
    config = config_from_args(args)  # --poll and --debounce-ms checked as every setting is
    daemon = Daemon(
        config, safety_rescan_s=args.safety_rescan_s, announce=None if args.quiet else _announce
    )
    return daemon.run()


def _announce(line: str, problem: bool) -> None:
    # a line names the vault's files, maybe with an ESC or a newline in a name
    print(f"wikimem-watch: {shown(line)}", file=sys.stderr if problem else sys.stdout, flush=True)


def _check_wait(wait_s: float) -> None:
    """``--wait`` of ``stop`` and ``check``, told before the daemon is asked anything (a
    ``stop --wait -1`` stopped the daemon, then said it was "still stopping after -1.0s")."""
    if not (math.isfinite(wait_s) and wait_s >= 0):
        raise BadRequest(f"--wait {wait_s!r}: expected seconds >= 0")


def stop_command(args: argparse.Namespace) -> int:
    _check_wait(args.wait)
    with connect_args(args) as client:
        path = client.path
        reply = obj(client.call("shutdown"))
    deadline = time.monotonic() + args.wait
    pid = reply.get("pid")

    # Gone, not only its socket: it saves its snapshot last, and a `stop && serve` in a
    # script must not meet the old daemon still holding the vault. Its pid tells; the socket
    # file only when there is none (a socket moved with its vault's folder stays behind).
    def running() -> bool:
        return _alive(pid) if isinstance(pid, int) else path.exists()

    while running() and time.monotonic() < deadline:
        time.sleep(0.05)
    if running():
        raise DaemonUnavailable(f"daemon pid {pid} is still stopping after {args.wait}s")
    print(f"stopped daemon pid {pid}")
    return 0


def _alive(pid: object) -> bool:
    """Whether process ``pid`` (on this machine: the socket is local) still runs."""
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # exited but not reaped by its parent yet (a zombie): gone for us
        with open(f"/proc/{pid}/stat", "rb") as fh:
            return fh.read().rsplit(b")", 1)[-1].split()[0] != b"Z"
    except (OSError, IndexError):
        return True


def check_command(args: argparse.Namespace) -> int:
    """Compare the daemon's index with a fresh in-process scan: 0 equal, 1 different.

    With no daemon there is nothing to compare, nor with one still reading the vault after
    ``--wait``: that is said, and the exit status is 2.
    Vault warnings are printed only with ``--verbose`` (``serve`` printed them once when it
    started, and ``status`` lists them).
    """
    _check_wait(args.wait)
    config = config_from_args(args)
    try:
        client = connect_args(args)
    except DaemonUnavailable:
        raise DaemonUnavailable(
            f"check compares a running daemon's index with a fresh scan, and no daemon is "
            f"running for {str(config.vault)!r}: nothing to compare (start one with: "
            f"wikimem-watch serve {config.vault})"
        ) from None
    with client:
        deadline = time.monotonic() + args.wait
        while True:
            status = obj(client.call("status"))
            quiet = status["state"] == "ready" and status["pending"] == 0
            if quiet or time.monotonic() >= deadline:
                break
            time.sleep(0.05)
        if status["state"] != "ready":  # half an index: every file not read yet "differs"
            raise DaemonUnavailable(
                f"the daemon is still reading the vault (status: {status['state']}) after "
                f"--wait {args.wait:g}s: nothing compared; wait longer with --wait SECONDS"
            )
        remote = obj(client.call("file_digests"))
    # a fresh scan that trusts no cache, of the notes the daemon indexes
    local = open_engine(_daemon_selection(config, remote.get("notes")), snapshot=False)
    if args.verbose:
        for path, warnings in sorted(local.warnings().items()):
            for warning in warnings:
                print(f"warning  {shown(path)}: {shown(warning)}", file=sys.stderr)
    if remote["digest"] == local.digest() and remote["skipped"] == local.left_out():
        print(
            f"ok: {len(local.files)} files, {len(local.entries)} entries, digest {local.digest()}"
        )
        return 0
    return _differences(remote, local)


def _daemon_selection(config: Config, notes: object) -> Config:
    """``config`` with the daemon's ``include``/``exclude``/``follow_external_symlinks``:
    a daemon served with ``--exclude 'wiki/*'`` was said to miss every wiki note."""
    if not isinstance(notes, dict):  # an older daemon: the flags given to check
        return config
    return dataclasses.replace(
        config,
        include=tuple(notes["include"]),
        exclude=tuple(notes["exclude"]),
        follow_external_symlinks=bool(notes["follow_external_symlinks"]),
    )


def _differences(remote: dict[str, Any], local: Engine) -> int:
    theirs: dict[str, str] = remote["files"]
    ours = local.file_digests()
    lines = [f"missing in daemon: {p}" for p in sorted(set(ours) - set(theirs))]
    lines += [f"stale in daemon:   {p}" for p in sorted(set(theirs) - set(ours))]
    lines += [
        f"differs:           {p}"
        for p in sorted(p for p in ours if theirs.get(p, ours[p]) != ours[p])
    ]
    skipped = set(remote["skipped"].items()) ^ set(local.left_out().items())
    lines += [f"skipped differs:   {p}" for p in sorted({p for p, _ in skipped})]
    # A path may hold a newline or an escape sequence: printed escaped, each line is one path.
    print(f"daemon index differs from a fresh scan ({len(lines)} differences):")
    print("\n".join(f"  {shown(line)}" for line in lines))
    return 1


def embed_command(args: argparse.Namespace) -> int:
    """Embed what the cache lacks (all with --rebuild), with a progress bar on stderr."""
    bar = Progress(sys.stderr)
    client = daemon_or_none(args)
    if client is not None:
        from .reading import warn_if_embedder_differs, warn_start_flags

        with client:
            if args.embed is not None:  # the daemon embeds with its own: said, as query says
                warn_if_embedder_differs(client, args.embed)
            warn_start_flags(args)
            status = obj(client.call("embed", {"rebuild": bool(args.rebuild)}))
            while status.get("busy"):  # queued or running; a failure ends it with pending > 0
                bar.pending(int(status.get("pending") or 0))
                time.sleep(0.5)
                status = obj(obj(client.call("status"))["vectors"])
            bar.pending(int(status.get("pending") or 0))  # the end, when work was seen
        bar.finish()
        return _embedded(status, args)
    config = config_from_args(args, in_process=True)
    if config.embed == "none":
        raise ConfigError(
            "no embedder configured: pass --embed local|http|hash (or set it in config.toml)"
        )
    engine = open_engine(config, vectors=True)
    if engine.vectors is None:
        raise ConfigError(f"the {config.embed!r} embedder could not start (see the warning above)")
    sync = engine.vectors.sync
    sync.on_progress = bar.update
    try:
        sync.sync(engine.embedding_inputs(), rebuild=args.rebuild)
    finally:
        bar.finish()
    return _embedded(engine.vectors.status(), args)


def _embedded(status: dict[str, Any], args: argparse.Namespace) -> int:
    """Print the cache's state; 0 when it is ready. A ``mismatch`` cache (made for another
    model or dimension) is never re-embedded by itself: say that ``--rebuild`` is the fix."""
    print_vectors(status)
    if status.get("state") == "mismatch":
        print(
            "wikimem-watch: the vector cache was made with another embedding model or "
            f"dimension than {status.get('embedder') or 'the configured one'}, so ranking is "
            f"BM25 only; re-embed everything with: wikimem-watch embed --vault {args.vault} "
            "--rebuild (resumable)",
            file=sys.stderr,
        )
    return EXIT_OK if status.get("state") == "ready" else EXIT_EMPTY


def parse_time_command(args: argparse.Namespace) -> int:
    from ..timeparse import parse_time_range

    now = None
    if args.now is not None:  # `--now "$UNSET"` read the clock, where query refuses it
        try:
            from ..retrieval.request import read_now

            now = read_now(args.now)
        except ValueError:
            raise BadRequest(
                f"--now {args.now!r} is not ISO-8601 (e.g. 2026-07-24T15:00)"
            ) from None
    try:
        found = parse_time_range(" ".join(args.text), now=now, tz=args.tz)
    except ValueError as exc:
        raise BadRequest(str(exc)) from None
    if args.json:
        print(json.dumps(found.to_dict() if found else None, ensure_ascii=False))
    elif found is None:
        print("no time expression")
    else:
        times = f" {found.start_time or ''}-{found.end_time or ''}" if found.start_time else ""
        print(
            f"{found.start} .. {found.end}{times}  matched {found.matched!r}  rest {found.rest!r}"
        )
    return EXIT_OK if found else EXIT_EMPTY


def _same_folder(a: str | Path, b: str | Path) -> bool:
    """``serve --vault $PWD/v v``: one folder, named twice."""
    try:
        return os.path.samefile(a, b)
    except OSError:
        return Path(a) == Path(b)
