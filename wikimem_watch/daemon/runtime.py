"""Per-machine runtime files: where a vault's socket and lock live, and the one-daemon lock.

Vaults are synced between machines, so nothing here may collide between two hosts' daemons:
the default socket is ``<cache>/daemon-<host>.sock`` (or, when that path is too long for
AF_UNIX, a hashed name in ``$XDG_RUNTIME_DIR/wikimem-watch/`` or a private 0700 directory
under the temp dir, or under the user's cache home when another user holds that name: see
:func:`runtime_dir`), and the lock always lives in that per-machine runtime directory.

The lock file holds the daemon's pid and socket as JSON. It is created complete (written to
a temporary file, locked, then hard-linked into place), so a reader never sees it half
written, and it is held with ``fcntl.flock``: a lock file whose flock is free is stale (its
daemon died, e.g. ``kill -9``) and is replaced. Clients read it to find a daemon started
with a custom ``--socket``.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import re
import socket
import stat
import sys
import time
from pathlib import Path

from ..errors import ConfigError
from ..record import Record
from ..settings import cache_dir_problem, user_cache_home

TYPE_CHECKING = False  # `typing` costs a client run milliseconds; type checkers see True
if TYPE_CHECKING:
    from ..config import Config
    from ..settings import VaultLocation

# sun_path is 108 bytes on Linux and 104 on macOS/BSD, both including the trailing NUL.
AF_UNIX_MAX_BYTES = (104 if sys.platform == "darwin" else 108) - 1


def host_tag() -> str:
    """This machine's name, safe for a file name (per-host files in a synced vault)."""
    name = re.sub(r"[^A-Za-z0-9._-]", "_", socket.gethostname().split(".")[0]) or "host"
    return name[:32]


def vault_key(config: Config | VaultLocation) -> str:
    """A short stable name for a vault on this machine (its resolved path, hashed)."""
    import hashlib

    return hashlib.sha256(os.fsencode(config.vault)).hexdigest()[:16]


def runtime_dir() -> Path:
    """Where this user's per-machine runtime files (lock, HTTP token, long-path sockets) go.

    ``$XDG_RUNTIME_DIR/wikimem-watch`` when usable; else ``<tmp>/wikimem-watch-<uid>``
    unless something there is not this user's directory: the temp dir is shared, and
    another local user may have made that name first (to stop our daemon from starting,
    or to plant a lock naming a socket of theirs, which a client would send its requests
    to). Then ``<user cache home>/run-<host>``, which no other user can make (per host:
    a home directory may be shared between machines).
    """
    xdg = os.environ.get("XDG_RUNTIME_DIR")
    if xdg and Path(xdg).is_dir() and os.access(xdg, os.W_OK | os.X_OK):
        return Path(xdg) / "wikimem-watch"
    import tempfile

    shared = Path(tempfile.gettempdir()) / f"wikimem-watch-{os.getuid()}"
    try:
        st = shared.lstat()
    except FileNotFoundError:
        return shared  # the daemon makes it (private_dir); a client finds nothing there
    except OSError:
        return _home_runtime_dir()
    if stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid():
        return shared
    return _home_runtime_dir()


def _home_runtime_dir() -> Path:
    return user_cache_home() / f"run-{host_tag()}"


def private_dir(path: Path) -> Path:
    """Create ``path`` as a 0700 directory we own; refuse one another user controls."""
    try:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        st = path.lstat()
    except OSError as exc:
        raise ConfigError(f"cannot create directory {str(path)!r}: {exc.strerror}") from None
    if not path.is_dir() or path.is_symlink() or st.st_uid != os.getuid():
        raise ConfigError(f"{str(path)!r} is not a directory owned by this user; remove it")
    if st.st_mode & 0o077:
        os.chmod(path, 0o700)
    return path


def default_socket_path(config: Config | VaultLocation) -> Path:
    """The socket a daemon for this vault listens on when no ``--socket`` is given: in the
    cache dir unless that path is too long or holds something a daemon did not make there
    (:func:`_planted`); the daemon and its clients both derive it, so both move."""
    preferred = config.cache_path / f"daemon-{host_tag()}.sock"
    usable = cache_dir_problem(config) is None and not _planted(preferred)
    if usable and len(os.fsencode(preferred)) <= AF_UNIX_MAX_BYTES:
        return preferred
    return runtime_dir() / f"{vault_key(config)}.sock"


def _planted(path: Path) -> bool:
    """True when something other than this user's socket is at ``path`` (nothing there is
    fine). The cache dir travels with a synced vault: a symlink planted as the socket led
    every client to another vault's daemon (``stop`` stopped it, a write landed in it) or to
    another user's socket, and a planted file stopped the daemon from starting."""
    try:
        st = path.lstat()
    except OSError:
        return False  # nothing there (or not reachable): binding or connecting says so
    return not stat.S_ISSOCK(st.st_mode) or st.st_uid != os.getuid()  # a symlink is no socket


def lock_path(config: Config | VaultLocation) -> Path:
    """The per-machine lock file of this vault's daemon (never inside the synced vault)."""
    return runtime_dir() / f"{vault_key(config)}.lock"


def check_socket_path(path: Path) -> None:
    if len(os.fsencode(path)) > AF_UNIX_MAX_BYTES:
        raise ConfigError(
            f"socket path {str(path)!r} is {len(os.fsencode(path))} bytes; AF_UNIX allows "
            f"{AF_UNIX_MAX_BYTES} (pick a shorter --socket, e.g. /tmp/wikimem.sock)"
        )


class LockInfo(Record):
    """What a lock file says about the daemon holding it."""

    __slots__ = ("pid", "socket", "host", "vault", "started_at")

    def __init__(self, pid: int, socket: str, host: str, vault: str, started_at: float) -> None:
        self.pid = pid
        self.socket = socket
        self.host = host
        self.vault = vault
        self.started_at = started_at


def _read_info(fd: int) -> LockInfo | None:
    try:
        if os.fstat(fd).st_uid != os.getuid():
            return None  # not written by this user: never trusted to name a socket
        raw = os.pread(fd, 65536, 0)
        data = json.loads(raw)
        return LockInfo(
            int(data["pid"]),
            str(data["socket"]),
            str(data.get("host", "")),
            str(data.get("vault", "")),
            float(data.get("started_at", 0.0)),
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None


def read_live_lock(path: Path) -> LockInfo | None:
    """The info of a daemon that holds ``path`` now, or None (no file, or a stale one)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return _read_info(fd)
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


class AlreadyRunning(ConfigError):
    """Another daemon holds this vault's lock."""

    def __init__(self, info: LockInfo | None, path: Path) -> None:
        who = f"pid {info.pid}, socket {info.socket}" if info else "details unreadable"
        from shlex import quote  # only here: a client run never needs it

        stop = f"wikimem-watch stop --vault {quote(info.vault)}" if info else "wikimem-watch stop"
        super().__init__(
            f"a daemon is already running for this vault ({who}; lock {path}); to start "
            f"this one instead, stop it first: {stop}"
        )
        self.info = info


class DaemonLock:
    """The exclusive flock that makes one daemon per vault per machine."""

    def __init__(self, path: Path, fd: int) -> None:
        self.path = path
        self._fd: int | None = fd

    @classmethod
    def acquire(cls, path: Path, info: LockInfo, attempts: int = 20) -> DaemonLock:
        """Take the lock, replacing a stale file; raise :class:`AlreadyRunning` when held."""
        private_dir(path.parent)
        payload = json.dumps(
            {
                "pid": info.pid,
                "socket": info.socket,
                "host": info.host,
                "vault": info.vault,
                "started_at": info.started_at,
            }
        ).encode()
        for _ in range(attempts):
            fd = cls._fresh(path, payload)
            if fd is not None:
                return cls(path, fd)
            held = cls._remove_if_stale(path)
            if held is not None:
                raise AlreadyRunning(held, path)
            time.sleep(0.01)
        raise AlreadyRunning(read_live_lock(path), path)

    @staticmethod
    def _fresh(path: Path, payload: bytes) -> int | None:
        """Write a complete, locked lock file beside ``path`` and link it in (None: exists)."""
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        fd = os.open(tmp, os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            os.write(fd, payload)
            os.fsync(fd)
            try:
                os.link(tmp, path)
            except FileExistsError:
                os.close(fd)
                return None
            return fd
        except BaseException:
            with contextlib.suppress(OSError):
                os.close(fd)
            raise
        finally:
            with contextlib.suppress(OSError):
                os.unlink(tmp)

    @staticmethod
    def _remove_if_stale(path: Path) -> LockInfo | None:
        """Unlink ``path`` when nobody holds it; return the holder's info when someone does."""
        try:
            fd = os.open(path, os.O_RDWR | os.O_CLOEXEC)
        except FileNotFoundError:
            return None
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                info = _read_info(fd)
                if _same_file(fd, path):
                    return info or LockInfo(0, "?", "", "", 0.0)
                return None  # replaced meanwhile: try again
            if _same_file(fd, path):
                os.unlink(path)  # stale: its daemon died without cleaning up
            return None
        finally:
            os.close(fd)

    def release(self) -> None:
        """Remove the lock file and drop the flock (idempotent)."""
        if self._fd is None:
            return
        with contextlib.suppress(OSError):
            if _same_file(self._fd, self.path):
                os.unlink(self.path)
        os.close(self._fd)
        self._fd = None


def _same_file(fd: int, path: Path) -> bool:
    try:
        a, b = os.fstat(fd), os.stat(path)
    except OSError as exc:
        if exc.errno in (errno.ENOENT, errno.ENOTDIR):
            return False
        raise
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


def ensure_cache_dir(config: Config) -> None:
    """Create the cache dir with a ``.gitignore`` of ``*`` (it is derived, per machine).

    Raises OSError when it cannot be created or written (the daemon then serves without
    caches) and when it must not be used (:func:`~wikimem_watch.config.cache_dir_problem`).
    """
    problem = cache_dir_problem(config)
    if problem is not None:
        raise OSError(errno.ELOOP, problem)
    cache = config.cache_path
    cache.mkdir(parents=True, exist_ok=True)
    ignore = cache / ".gitignore"
    if not ignore.exists():
        tmp = cache / f".gitignore.{os.getpid()}.tmp"
        tmp.write_text("*\n", encoding="utf-8")
        os.replace(tmp, ignore)


# ------------------------------------------------------------- the remembered embedder

REMEMBERED_EMBEDDERS = ("local", "hash")  # never a network embedder: see remembered_embedder
MAX_STATE_BYTES = 4096


def embedder_state_path(cache_path: Path) -> Path:
    """``<cache>/embedder-<host>.json``: which embedder this host's last daemon used."""
    return cache_path / f"embedder-{host_tag()}.json"


def remember_embedder(config: Config) -> None:
    """Record the embedder this daemon uses, for in-process runs on this host (atomic)."""
    from ..atomic import atomic_write

    record = {"embed": config.embed, "host": host_tag(), "written_at": round(time.time(), 3)}
    atomic_write(embedder_state_path(config.cache_path), json.dumps(record).encode() + b"\n")


def remembered_embedder(cache_path: Path) -> str | None:
    """The embedder this host's last daemon used, when it keeps data on this machine.

    Only ``local`` and ``hash`` are taken from the file: it lives in the cache dir, usually
    inside the vault, and nothing in the vault may send notes off the machine or choose an
    endpoint (ADR-0010), so an ``http`` record is ignored. A file that is missing, a
    symlink, oversized or malformed counts as no record.
    """
    try:
        fd = os.open(embedder_state_path(cache_path), os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        raw = os.read(fd, MAX_STATE_BYTES + 1)
    except OSError:
        return None
    finally:
        os.close(fd)
    try:
        record = json.loads(raw) if len(raw) <= MAX_STATE_BYTES else None
    except (ValueError, UnicodeDecodeError):
        return None
    kind = record.get("embed") if isinstance(record, dict) else None
    return kind if kind in REMEMBERED_EMBEDDERS else None
