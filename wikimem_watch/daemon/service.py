"""The daemon: lock, socket, initial scan, the single writer thread, signals and cleanup.

Threads: the main thread only waits for a stop (a signal arrives through a wakeup pipe, so
no Python lock is ever taken inside a signal handler); one *writer* thread owns every
mutation of the engine — the initial scan, watcher change sets, ``reindex`` jobs and the
periodic safety rescan — so changes are applied in order; socket threads only read, under
the engine lock, which the writer takes only to swap in files it has already read and parsed
(ADR-0011). The writer is a daemon thread: a stop waits ``WRITER_JOIN_S`` for it, no longer.

How the writer reads the vault (the start from a snapshot, change sets, the safety
rescan) is ``scans.VaultScans``, a mixin of ``Daemon``.
"""

from __future__ import annotations

import contextlib
import logging
import os
import queue
import select
import signal
import stat
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from ..config import Config, cache_dir_problem
from ..core.engine import Engine
from ..core.plan import plan_scan
from ..errors import ConfigError, WatchError
from .journal import JOURNAL_NAME, Journal
from .methods import STOP_AFTER_REPLY
from .reports import DaemonReports
from .runtime import (
    DaemonLock,
    LockInfo,
    check_socket_path,
    default_socket_path,
    ensure_cache_dir,
    host_tag,
    lock_path,
    private_dir,
    remember_embedder,
    runtime_dir,
    vault_key,
)
from .scans import StatKey, VaultScans
from .server import Limits, Server
from .subscriptions import ChangeFeed
from .vault_writer import VaultWriter
from .watcher import ChangeQueue, ChangeSet, ObserverFactory, Watcher

TYPE_CHECKING = False
if TYPE_CHECKING:  # types only: the vector side and HTTP load when configured
    from ..vectors.service import VectorService
    from .http import HttpEndpoint

log = logging.getLogger(__name__)

WRITER_JOIN_S = 3.0  # how long a stop waits for the file in hand before leaving without it
WATCHER_STOP_S = 5.0  # how long a stop waits for the file watcher's threads
# A snapshot being written at a stop is bounded work (~0.6 s per 100k entries, more on a busy
# machine) and saves the next start a cold scan: a stop waits this much longer for it.
SNAPSHOT_JOIN_S = 60.0
SAFETY_RESCAN_S = 300.0
SNAPSHOT_IDLE_S = 5.0  # the index snapshot is saved after this long without changes
KEEP_CHECK_S = 2.0  # how often the vault folder and the socket file are checked (two stats)


@dataclass(slots=True)
class _Job:
    """A request for the writer thread (``reindex``), answered through ``done``."""

    kind: str
    done: threading.Event = field(default_factory=threading.Event)
    result: dict[str, object] = field(default_factory=dict)


_STOP = object()


def warm_query_path() -> None:
    """Load the query path and the time parser, which ``query`` imports on first use: right
    after the daemon is ready (~10 ms sooner without them), so a later query finds them."""
    from ..retrieval.query import run_query  # noqa: F401


class Daemon(VaultScans, DaemonReports):
    """One vault's live index served on a socket. ``run()`` blocks until stopped."""

    def __init__(
        self,
        config: Config,
        *,
        socket_path: Path | None = None,
        force_polling: bool | None = None,
        safety_rescan_s: float = SAFETY_RESCAN_S,
        vectors: VectorService | None = None,
        observer_factory: ObserverFactory | None = None,
        announce: Callable[[str, bool], None] | None = None,
    ) -> None:
        self.config = config
        # Told one line when the daemon is ready, then one per problem (the flag): ``serve``
        # prints them unless ``--quiet``.
        self.announce = announce
        self.http: HttpEndpoint | None = None
        self.engine = Engine(config)
        self.cache_problem = cache_dir_problem(config)
        if vectors is None and self.cache_problem is None and config.embed != "none":
            from ..vectors.service import open_vectors

            vectors = open_vectors(config, background=True)  # BM25 serves meanwhile
        self.engine.vectors = vectors
        # Writes (ADR-0016): applied through the feed, which also tells subscribers and
        # journals external changes; searchable when the write call returns.
        self.journal = Journal(config.vault)
        self.writer = VaultWriter(
            config.vault,
            journal=self.journal,
            on_written=self._applied,
            indexed_hash=self._indexed_hash,
            shared_lock=True,
        )
        self.feed = ChangeFeed(
            self.engine,
            self.journal,
            self.writer.is_own,
            between_applies=self._between_applies,
            max_connections=config.max_connections,
            own_mark=self.writer.own_mark,
            not_own_before=self.writer.not_own_before,
        )
        self._socket_chosen = socket_path is not None or config.socket is not None
        self.socket_path = socket_path or config.socket or default_socket_path(config)
        self.force_polling = config.poll if force_polling is None else force_polling
        self.safety_rescan_s = safety_rescan_s
        self.state = "scanning"
        self.started_at = time.time()
        self._started_mono = time.monotonic()
        self._changes = ChangeQueue()
        self.scan_files: int | None = None  # files the initial scan reads, while it runs
        self._writes_waiting = 0  # write requests waiting for ``apply_lock`` (``_applied``)
        self._writes_done = threading.Condition()
        self._restored = threading.Event()  # set once the snapshot restore is over (or none)
        self._stop_requested = False
        self.exit_status = 0
        self._vault_id: tuple[int, int] | None = None
        self._vault_misses = 0  # checks in a row that found another folder, or none
        self._rebind_failed = False
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_w, False)
        self._stats: dict[str, StatKey] = {}
        self._unreported: dict[str, str] = {}  # the safety rescan's, until the watcher tells
        self._unreported_until = 0.0
        self._last_rescan = time.monotonic()
        self._unresolved: tuple[int, list[dict[str, object]], float] = (-1, [], 0.0)
        self._saved: tuple[int, int] | None = None  # (generation, stat refreshes) on disk
        path = config.snapshot_path
        # What ``status`` says of the index snapshot (ADR-0015).
        self.snapshot: dict[str, object] = {
            "path": None if path is None else str(path),
            "loaded": False,
            "reread": None,
            "saved_at": None,
        }
        self.watcher = Watcher(
            config.vault,
            self._changes,  # type: ignore[arg-type]  # also carries jobs and the stop mark
            self.engine.note_filter.accepts,
            debounce_ms=config.debounce_ms,
            ignore_dirs=_inside(config.vault, config.cache_path),
            links=self.engine.links_reading,
            own_files=(JOURNAL_NAME,),
            linked_dir=lambda rel: rel in self.engine.linked_dirs,
            force_polling=self.force_polling,
            observer_factory=observer_factory,
        )
        self.server = Server(
            self.socket_path,
            self,
            limits=Limits(
                max_request_bytes=config.max_request_bytes,
                max_buffered_bytes=config.max_buffered_bytes,
                max_connections=config.max_connections,
                idle_timeout_s=config.idle_timeout_s,
            ),
            after_reply=self._after_reply,
        )

    # ------------------------------------------------------------------ lifecycle

    def run(self) -> int:
        """Serve until SIGTERM/SIGINT/SIGHUP or ``shutdown``; clean up and return 0 (2 when
        it stopped because the vault's folder went away)."""
        if self.announce is None:  # else said once, with the other problems, when ready
            for warning in self.config.warnings:
                log.warning("config: %s", warning)
        self._prepare_cache_dir()
        check_socket_path(self.socket_path)
        self._prepare_socket_dir()
        self._vault_id = _dir_id(self.config.vault)
        info = LockInfo(
            os.getpid(), str(self.socket_path), host_tag(), str(self.config.vault), self.started_at
        )
        lock = DaemonLock.acquire(lock_path(self.config), info)
        writer: threading.Thread | None = None
        recorder: threading.Thread | None = None
        previous = self._install_signals()
        try:
            recorder = self._record_embedder()
            self.server.bind()
            self.server.start()
            if self.config.http:
                from .http import start_http

                self.http = start_http(self, self.config, self._after_reply)
            self.watcher.start()  # before the scan: nothing that changes meanwhile is lost
            log.info(
                "serving %s on %s (%s watcher)",
                self.config.vault,
                self.socket_path,
                self.watcher.kind,
            )
            # A daemon thread, joined with a deadline: nothing the writer does (a read that
            # hangs on a network mount, a long parse) may keep SIGTERM from stopping us.
            writer = threading.Thread(target=self._writer, name="writer", daemon=True)
            writer.start()
            self.writer.start()
            self._wait_for_stop()
        finally:
            self._stop_requested = True
            self._changes.put(_STOP)
            if writer is not None:
                writer.join(WRITER_JOIN_S)
                if writer.is_alive() and self.saving_snapshot:
                    log.info("finishing the index snapshot before stopping")
                    writer.join(SNAPSHOT_JOIN_S)
                if writer.is_alive():
                    log.warning(
                        "the writer is still busy after %.0fs; stopping anyway", WRITER_JOIN_S
                    )
            if recorder is not None:
                recorder.join(WRITER_JOIN_S)
            self._stop_watcher()
            self.writer.stop()
            if self.engine.vectors is not None:
                self.engine.vectors.close()
            if self.http is not None:
                self.http.close()
            self.server.close()
            lock.release()
            self._restore_signals(previous)
            os.close(self._wake_r)
            os.close(self._wake_w)
        log.info("stopped")
        return self.exit_status

    def _prepare_socket_dir(self) -> None:
        parent = self.socket_path.parent
        if parent == self.config.cache_path:
            os.chmod(parent, 0o700)  # the cache dir holds this host's socket: private
        elif not parent.exists():
            if not parent.parent.is_dir():  # one folder is ours to make; a chain is a typo
                raise ConfigError(
                    f"cannot create the socket {str(self.socket_path)!r}: the folder "
                    f"{str(parent.parent)!r} does not exist "
                    "(choose another path with --socket PATH)"
                )
            try:
                private_dir(parent)  # ours to create; an existing dir (/tmp) is left as it is
            except ConfigError as exc:
                raise ConfigError(
                    f"cannot create the socket {str(self.socket_path)!r}: {exc.message} "
                    "(choose another path with --socket PATH)"
                ) from None

    def _prepare_cache_dir(self) -> None:
        """Create the cache dir; when that fails, serve without caches (BM25 needs none),
        with the socket in the private runtime dir unless the user chose one."""
        try:
            ensure_cache_dir(self.config)
        except OSError as exc:
            self.cache_problem = self.cache_problem or (
                f"cannot use the cache directory {str(self.config.cache_path)!r}: "
                f"{exc.strerror or exc}"
            )
        if self.cache_problem is None:
            return
        log.warning("%s; serving without caches (BM25 only, nothing written)", self.cache_problem)
        if self.engine.vectors is not None:
            self.engine.vectors.close()
            self.engine.vectors = None
        if not self._socket_chosen and self.socket_path.parent == self.config.cache_path:
            self.socket_path = runtime_dir() / f"{vault_key(self.config)}.sock"
            self.server.path = self.socket_path
            private_dir(self.socket_path.parent)

    def _install_signals(self) -> dict[int, object]:
        if threading.current_thread() is not threading.main_thread():
            return {}
        previous: dict[int, object] = {}
        # SIGHUP too (the terminal that ran `serve` closed): its default ended the daemon
        # at once, leaving its socket and lock and no snapshot. Ignored stays ignored (nohup).
        hup = [signal.SIGHUP] if signal.getsignal(signal.SIGHUP) is not signal.SIG_IGN else []
        for sig in (signal.SIGTERM, signal.SIGINT, *hup):
            previous[sig] = signal.signal(sig, lambda signum, frame: None)
        previous[-1] = signal.set_wakeup_fd(self._wake_w)
        return previous

    @staticmethod
    def _restore_signals(previous: dict[int, object]) -> None:
        for sig, handler in previous.items():
            if sig == -1:
                assert isinstance(handler, int)
                signal.set_wakeup_fd(handler)
            else:
                signal.signal(sig, handler)  # type: ignore[arg-type]

    def _wait_for_stop(self) -> None:
        # A signal's number (or a byte from request_stop) arrives on the pipe; nothing else.
        # Every KEEP_CHECK_S the vault and the socket file are looked at (two stats), and the
        # file watcher's threads.
        while not self._stop_requested:
            ready, _, _ = select.select([self._wake_r], [], [], KEEP_CHECK_S)
            if not ready:
                if self._vault_gone():
                    return
                self._keep_socket()
                if not self._vault_misses:  # a vault deleted ends the observer too: no restart
                    self.watcher.revive()  # an observer whose thread died sees nothing more
                continue
            data = os.read(self._wake_r, 64)
            if data:
                log.info("stopping (signal or shutdown request)")
                return

    def _vault_gone(self) -> bool:
        """True (said, exit status 2) when the vault's folder was deleted, moved away or
        replaced: the daemon would serve a vault that is not there, and hold its lock
        against the daemon of the folder now at that path."""
        if _dir_id(self.config.vault) == self._vault_id:
            self._vault_misses = 0
            return False
        # Twice in a row: one failed stat (a network file system's hiccup) stops nothing.
        self._vault_misses += 1
        if self._vault_misses < 2:
            return False
        log.error(
            "the vault %s was deleted or moved away (or replaced); stopping",
            self.config.vault,
        )
        self.exit_status = 2
        return True

    def _keep_socket(self) -> None:
        """Listen again when the socket file (or the cache dir holding it) was deleted: the
        daemon, holding the vault's lock, would else be out of every client's reach, ``stop``
        included, while a new ``serve`` is refused."""
        if self.server.listening_on_path():
            return
        try:
            if self.socket_path.parent == self.config.cache_path and self.cache_problem is None:
                ensure_cache_dir(self.config)
            self._prepare_socket_dir()
            self.server.rebind()
        except (OSError, ConfigError) as exc:
            if not self._rebind_failed:
                log.warning(
                    "the socket %s is gone and cannot be made again: %s", self.socket_path, exc
                )
            self._rebind_failed = True
            return
        self._rebind_failed = False
        log.warning("the socket %s was deleted; listening there again", self.socket_path)

    def _stop_watcher(self) -> None:
        """Stop the watcher, waiting at most ``WATCHER_STOP_S``: watchdog joins its threads
        without a timeout, and one stuck (a folder swapped under it) must not keep the socket
        and the lock alive."""

        def stop() -> None:
            try:
                self.watcher.stop()
            except Exception:  # in watchdog's threads; the daemon is stopping anyway
                log.exception("stopping the file watcher failed")

        thread = threading.Thread(target=stop, name="watch-stop", daemon=True)
        thread.start()
        thread.join(WATCHER_STOP_S)
        if thread.is_alive():
            log.warning("the file watcher did not stop in %.0fs; stopping anyway", WATCHER_STOP_S)

    def request_stop(self) -> None:
        self._stop_requested = True
        with contextlib.suppress(OSError):
            os.write(self._wake_w, b"\0")

    def _after_reply(self, method: str) -> None:
        if method in STOP_AFTER_REPLY:
            self.request_stop()

    # -------------------------------------------------------------------- writer

    def _writer(self) -> None:
        # The notes' warnings of the first scan are announced with the ready line: not also
        # logged as each note is read (the scan helper takes this level too). Later edits log.
        notes = logging.getLogger("wikimem_watch.core.prepare")
        level = notes.level
        if self.announce is not None:
            notes.setLevel(logging.ERROR)
        try:
            self._guarded(self._initial_scan)
        finally:
            notes.setLevel(level)
            self.state = "ready"
        if self._stop_requested:  # stopped during the first scan: not ready, and not said so
            log.info("stopped during the first scan: %d files read", len(self.engine.files))
            self._guarded(self._save_snapshot)  # valid: files not reached keep no stat
            return
        log.info("ready: %d files, %d entries", len(self.engine.files), len(self.engine.entries))
        if self.announce is not None:
            self._announce_ready(self.announce)
        # On a thread of its own: the writer goes on to its loop at once (a stop that comes
        # meanwhile still saves the snapshot), and a query waits only for what it needs.
        threading.Thread(target=warm_query_path, name="warm", daemon=True).start()
        # The snapshot is written once the writer has been idle SNAPSHOT_IDLE_S: writing
        # takes ~1.5 s per 100k entries, and edits arriving meanwhile would wait for it.
        save_at: float | None = time.monotonic() + SNAPSHOT_IDLE_S
        while not self._stop_requested:
            now = time.monotonic()
            wait = self._last_rescan + self.safety_rescan_s - now
            if save_at is not None:
                wait = min(wait, save_at - now) if self.safety_rescan_s else save_at - now
            if self._unreported:  # only a safety rescan fills it: ``safety_rescan_s`` is set
                wait = min(wait, self._unreported_until - now)
            try:
                item = (
                    self._changes.get(timeout=max(wait, 0.0))
                    if self.safety_rescan_s or save_at is not None
                    else (self._changes.get())
                )
            except queue.Empty:
                self._guarded(self._report_missed)  # before a rescan adds to what it reports
                rescan_at = self._last_rescan + self.safety_rescan_s
                if self.safety_rescan_s and time.monotonic() >= rescan_at:
                    self._guarded(self._safety_rescan)
                    save_at = time.monotonic() + SNAPSHOT_IDLE_S
                elif save_at is not None and time.monotonic() >= save_at:
                    self._guarded(self._save_snapshot)  # a no-op when nothing changed
                    save_at = None
                continue
            save_at = time.monotonic() + SNAPSHOT_IDLE_S  # once this change has settled
            if item is _STOP:
                break
            if isinstance(item, ChangeSet):
                self._guarded(partial(self._apply_changes, item))
                self._changes.done_with()
            elif isinstance(item, _Job):
                self._run_job(item)
        # Stopping, also when the stop came while a change was being applied: what is in the
        # index is consistent with the stats it records (a file not applied yet keeps its old
        # stat, so the next start re-reads it). A stop waits SNAPSHOT_JOIN_S for the write.
        self._guarded(self._save_snapshot)

    @staticmethod
    def _guarded(fn: Callable[[], object]) -> None:
        try:
            fn()
        except Exception:  # a bug must not stop the daemon; the safety rescan repairs
            log.exception("applying changes failed")

    def _run_job(self, job: _Job) -> None:
        try:
            started = time.perf_counter()
            # What it finds changed are external changes the watcher missed: journaled, as
            # the safety rescan journals them.
            stats = self._scan_chunked(external=True)
            job.result = {
                "changed": len(stats.changed),
                "removed": len(stats.removed),
                "unchanged": stats.unchanged,
                "skipped": len(stats.skipped),
                "generation": self.engine.generation,
                "elapsed_s": round(time.perf_counter() - started, 3),
            }
        except Exception as exc:
            log.exception("reindex failed")
            job.result = {"error": str(exc)}
        finally:
            job.done.set()

    def _record_embedder(self) -> threading.Thread | None:
        """Record the embedder for in-process runs on this host on a thread of its own: an
        atomic write with two fsyncs (5 ms to 0.5 s on a busy disk) that neither ``ready``
        nor the first edit waits for."""
        if self.cache_problem is not None:
            return None
        thread = threading.Thread(target=self._remember_embedder, name="record", daemon=True)
        thread.start()
        return thread

    def _remember_embedder(self) -> None:
        try:  # in-process runs on this host use the same (local/hash) embedder
            remember_embedder(self.config)
        except OSError as exc:
            log.warning("cannot record the embedder in the cache dir: %s", exc)

    # ------------------------------------------------------------------- service

    def reindex(self, dry_run: bool = False) -> dict[str, object]:
        if dry_run:
            if self.state == "scanning":  # against half an index every unread file "changed"
                raise WatchError(
                    "the daemon is still reading the vault (status: scanning); "
                    "ask for a dry run once it is ready"
                )
            return plan_scan(self.engine)  # reads only; appliers wait on the apply lock
        job = _Job("reindex")
        self._changes.put(job)
        if not job.done.wait(timeout=3600):
            return {"error": "reindex did not finish within an hour"}
        return job.result


def _dir_id(path: Path) -> tuple[int, int] | None:
    """(st_dev, st_ino) of the directory at ``path``; None when there is none."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino) if stat.S_ISDIR(st.st_mode) else None


def _inside(root: Path, path: Path) -> tuple[str, ...]:
    try:
        return (path.resolve().relative_to(root).as_posix(),)
    except (ValueError, OSError):
        return ()
