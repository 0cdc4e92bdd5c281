"""File I/O of the write path: vault-confined targets, snapshots, ``O_APPEND`` and the atomic
compare-and-swap replace (ADR-0016). No parsing and no index here.

A person's editor takes no lock, so every step assumes someone may write the same file at
any moment:

- a **snapshot** is read through ``O_NOFOLLOW | O_NONBLOCK`` (a planted symlink or FIFO is
  refused, never followed or waited on) and its descriptor is kept open;
- an **append** at the end of a file is one ``write`` on an ``O_APPEND`` descriptor of the
  very file we read (same inode, same size), so it cannot clobber another appender;
- a **replace** writes a temp file beside the target (fsync, the target's mode), then
  exchanges it with the target atomically (``renameat2(RENAME_EXCHANGE)`` on Linux) and
  compares the displaced file byte for byte with what the edit was based on. Different
  bytes mean another writer got in between: the edit is re-applied on *their* bytes and the
  exchange repeated, for at most ``CONTEND_S`` seconds. Where exchange is unavailable the
  target is compared just before ``os.replace`` and the old descriptor just after it;
- the displaced file is kept open for ``RETIRE_S`` seconds (``Retired``): bytes a process
  appends to it after the replace (it opened the file before) are appended to the new file.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import fcntl
import logging
import os
import random
import secrets
import stat
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from ..core.vault import MAX_NOTE_BYTES
from ..errors import BadRequest, WatchError

LOCK_WAIT_S = 10.0  # how long a write waits for another process's writes to the vault
MAX_ATTEMPTS = 200  # a bound on attempts, and on time below: whichever comes first
RETRIES = 16  # whole read-edit-write rounds a writer makes (a file created or gone meanwhile)
CONTEND_S = 3.0  # how long a replace keeps re-applying under another busy writer
RETIRE_S = 2.0
BACKOFF_S = 0.004  # × attempt (capped): the most a conflicting replace waits before retrying
log = logging.getLogger(__name__)

_READ = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_APPEND = os.O_RDWR | os.O_APPEND | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_AT_FDCWD = -100
_RENAME_EXCHANGE = 2


class WriteConflict(WatchError):
    """Other writers kept changing the file; nothing of theirs was overwritten."""

    code = -32009


class WriteFailed(WatchError):
    """The file system refused the write (no permission, an immutable file, a read-only or
    full file system): the caller can fix that, it is no bug of the daemon."""

    code = -32011


@contextlib.contextmanager
def vault_lock(root: Path, *, shared: bool = False) -> Iterator[None]:
    """Hold the vault's advisory write lock (``flock`` on the vault folder) while a write runs.

    The compare-and-swap below keeps an editor's save, but between two of our writers it can
    only let the later one win: two processes writing one file without a daemon (a CLI and an
    MCP server, two scripts) lost items that way. Writers that share a process with no daemon
    take the lock exclusive, so they take turns; the daemon's writers take it shared (they
    already take turns per file) and so exclude those. Editors take no lock: they are what
    the compare-and-swap is for. A folder that cannot be opened or locked (a file system
    without ``flock``) is written without the lock, as before it existed."""
    try:
        fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        yield
        return
    try:
        deadline = time.monotonic() + LOCK_WAIT_S
        mode = (fcntl.LOCK_SH if shared else fcntl.LOCK_EX) | fcntl.LOCK_NB
        while True:
            try:
                fcntl.flock(fd, mode)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise WriteConflict(
                        f"another process has been writing to {str(root)!r} for "
                        f"{LOCK_WAIT_S:g}s (it holds the vault's write lock); nothing was "
                        "written, try again"
                    ) from None
                time.sleep(0.005)
            except OSError as exc:  # a file system without flock (some network mounts)
                log.debug("%s: no advisory write lock (%s); writing without it", root, exc)
                break
        yield
    finally:
        os.close(fd)  # releases the lock


@dataclass(slots=True)
class Snapshot:
    """A file as read: its bytes (``None``: no file), stat, and the descriptor kept open."""

    raw: bytes | None
    st: os.stat_result | None = None
    fd: int | None = None

    @property
    def text(self) -> str | None:
        return None if self.raw is None else self.raw.decode("utf-8")

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


@dataclass(slots=True)
class Retired:
    """A file our replace displaced, watched for late appends (``raw``: what it held)."""

    fd: int
    raw: bytes
    until: float


def target(root: Path, rel: str) -> Path:
    """The path of vault-relative ``rel``, creating missing directories; refuses ``..``,
    absolute paths, and directories or files that are symlinks or not what they seem."""
    parts = rel.split("/")
    if rel.startswith("/") or any(p in ("", ".", "..") for p in parts):
        raise BadRequest(f"{rel!r}: writes stay inside the vault (no '..' or absolute paths)")
    here = root
    for part in parts[:-1]:
        here = here / part
        with contextlib.suppress(FileExistsError):
            os.mkdir(here)
        if not stat.S_ISDIR(os.lstat(here).st_mode):
            raise BadRequest(
                f"{rel!r}: {part!r} is a symlink or not a directory; writes never leave the vault"
            )
    path = root / rel
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return path
    if not stat.S_ISREG(mode):
        raise BadRequest(f"{rel!r} is a symlink or not a regular file; not writing through it")
    return path


def read_snapshot(path: Path, rel: str) -> Snapshot:
    """Read ``path`` (regular file, valid UTF-8, at most 8 MiB); keep its descriptor open."""
    try:
        fd = os.open(path, _READ)
    except FileNotFoundError:
        return Snapshot(None)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise BadRequest(f"{rel!r} is a symlink; not writing through it") from None
        raise
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise BadRequest(f"{rel!r} is not a regular file; not writing")
        if not st.st_mode & 0o222:  # the person's lock on a note; a rename would ignore it
            raise WriteFailed(
                f"{rel!r} is read-only (mode {stat.S_IMODE(st.st_mode):o}); not writing "
                "(chmod u+w lets writes in)"
            )
        raw = _read_fd(fd)
        if len(raw) > MAX_NOTE_BYTES:
            raise BadRequest(f"{rel!r} is larger than {MAX_NOTE_BYTES >> 20} MiB; not editing")
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise BadRequest(
                f"{rel!r} is not valid UTF-8 (byte {exc.start}); not editing it"
            ) from None
    except BaseException:
        os.close(fd)
        raise
    return Snapshot(raw, st, fd)


def _read_fd(fd: int) -> bytes:
    chunks: list[bytes] = []
    offset = 0
    while True:
        chunk = os.pread(fd, 1 << 20, offset)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        offset += len(chunk)
        if offset > MAX_NOTE_BYTES:
            return b"".join(chunks)


def append(path: Path, snap: Snapshot, data: bytes) -> tuple[int, bytes] | None:
    """Append ``data`` in one ``write`` to the file ``snap`` read, if it is still that file
    with that size; returns (offset of ``data``, the bytes before it) or None (read again)."""
    assert snap.st is not None and snap.raw is not None
    try:
        fd = os.open(path, _APPEND)
    except OSError as exc:
        if exc.errno in (errno.ENOENT, errno.ELOOP):  # gone or swapped for a link: read again
            return None
        raise  # no permission, read-only: reading again cannot help
    try:
        st = os.fstat(fd)
        same = (st.st_dev, st.st_ino, st.st_size) == (snap.st.st_dev, snap.st.st_ino, len(snap.raw))
        if not stat.S_ISREG(st.st_mode) or not same:
            return None
        written = os.write(fd, data)
        while written < len(data):  # a regular file takes it whole; this is for the odd case
            written += os.write(fd, data[written:])
        end = os.lseek(fd, 0, os.SEEK_CUR)
        os.fsync(fd)
        start = end - len(data)
        return start, os.pread(fd, start, 0) if start else b""
    finally:
        os.close(fd)


def create(path: Path, data: bytes) -> bool:
    """Create ``path`` holding ``data`` atomically; False when it exists already."""
    tmp = _temp(path, data, 0o644 & ~_umask())
    try:
        os.link(tmp, path)
    except FileExistsError:
        return False
    finally:
        os.unlink(tmp)
    _fsync_dir(path.parent)
    return True


def replace(
    path: Path,
    rel: str,
    snap: Snapshot,
    edit: Callable[[str], str],
    retire: Callable[[Retired], None],
) -> str:
    """Replace the file ``snap`` read with ``edit(its text)``, compare-and-swap; returns the
    text written. Another writer's bytes are never overwritten: the edit is re-applied on
    them (``WriteConflict`` after ``CONTEND_S`` of contention)."""
    assert snap.raw is not None and snap.st is not None
    base, expect = snap.raw, snap.raw
    # Bytes other writers appended to one of our own attempts while it was in place: they
    # are in no file on disk once the attempt is swapped back, so every later attempt
    # carries them, whatever the note holds by then, until one is written.
    carried = b""
    mode = stat.S_IMODE(snap.st.st_mode)
    deadline = time.monotonic() + CONTEND_S
    for attempt in range(MAX_ATTEMPTS):
        if attempt and time.monotonic() > deadline:
            break
        if carried:
            base = expect + (b"" if expect.endswith((b"\n", b"\r")) else b"\n") + carried
        new_text = edit(base.decode("utf-8"))
        if attempt and new_text.encode("utf-8") != base:
            # Another writer is busy with this file and its bytes lack our edit: let its
            # burst pass. (When they already hold it — it built on our file — go at once.)
            time.sleep(random.uniform(0, BACKOFF_S * min(attempt, 10)))
        new = new_text.encode("utf-8")
        if _EXCHANGE is not None:
            try:
                swapped = _swap_in(path, new, mode)
            except OSError as exc:
                if exc.errno not in _UNSUPPORTED:
                    raise
                _disable_exchange()  # this file system cannot: compare, then os.replace
                continue
            if swapped is None:
                raise WriteConflict(f"{rel!r} was deleted while being written; not recreating")
            tmp, fd, old = swapped
            if old == expect:
                os.unlink(tmp)
                _fsync_dir(path.parent)
                retire(Retired(fd, old, 0.0))  # bytes appended to it from now on move over
                return new_text
            # Someone else's bytes: swap them straight back, so that nobody builds on our
            # file (which lacks them), then edit them on the next attempt.
            os.close(fd)
            carried += _swap_back(tmp, path, new, rel, retire)
            base = expect = old
            continue
        # No exchange: compare, then replace. What is watched for late bytes is the file
        # this attempt compared (an editor's save may have put another one in place since
        # the first read: the first file's bytes are no reason to go back to them).
        watched = _open_now(path)
        if watched is None:
            raise WriteConflict(f"{rel!r} was deleted while being written; not recreating")
        try:
            current = _read_fd(watched)
            if current != expect:
                base, expect = current, current
                continue
            tmp = _temp(path, new, mode)
            os.replace(tmp, path)
            _fsync_dir(path.parent)
            late = _read_fd(watched)
        finally:
            os.close(watched)
        if late == expect:
            return new_text
        base, expect = late, new  # written to the file we replaced after we read it
    raise WriteConflict(
        f"{rel!r} kept changing under other writers for {CONTEND_S:g} s; nothing written over "
        "their bytes — retry"
    )


def _swap_back(
    tmp: Path, path: Path, new: bytes, rel: str, retire: Callable[[Retired], None]
) -> bytes:
    """Put the displaced file (now at ``tmp``) back at ``path``; returns what other writers
    appended to our attempt while it was in place (to carry into the next attempt)."""
    _exchange(tmp, path)
    # Our attempt, displaced in its turn: a writer that opened the note while it was in
    # place may append to it yet, so it is watched like any displaced file.
    back_fd = os.open(tmp, _READ)
    back = _read_fd(back_fd)
    os.unlink(tmp)
    retire(Retired(back_fd, back, 0.0))
    if back == new:
        return b""
    if back.startswith(new):  # an append landed in the microseconds it was in place
        return back[len(new) :]
    log.warning(
        "%s: a save built on our attempt in the microseconds it was in place changed it "
        "other than at the end; that save is superseded",
        rel,
    )
    return b""


def _swap_in(path: Path, data: bytes, mode: int) -> tuple[Path, int, bytes] | None:
    """Swap a new file holding ``data`` with ``path``; returns the temp name (now naming the
    displaced file), the displaced file open, and its bytes; None when ``path`` is gone."""
    tmp = _temp(path, data, mode)
    try:
        _exchange(tmp, path)
    except BaseException as exc:
        os.unlink(tmp)
        if isinstance(exc, FileNotFoundError):
            return None
        raise
    fd = os.open(tmp, _READ)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise BadRequest(f"{path.name!r} was swapped for a non-regular file; stopping")
        return tmp, fd, _read_fd(fd)
    except BaseException:
        os.close(fd)
        raise


def _open_now(path: Path) -> int | None:
    """The file at ``path`` now, open for reading; None when there is none."""
    try:
        return os.open(path, _READ)
    except FileNotFoundError:
        return None


def _read_now(path: Path) -> bytes | None:
    fd = _open_now(path)
    if fd is None:
        return None
    try:
        return _read_fd(fd)
    finally:
        os.close(fd)


def rescue(path: Path, old: Retired) -> bytes:
    """Bytes appended to a displaced file after it was displaced, appended to ``path`` now
    (empty when none, or when the file was changed other than by appending)."""
    now = _read_fd(old.fd)
    if len(now) <= len(old.raw) or not now.startswith(old.raw):
        return b""
    tail = now[len(old.raw) :]
    fd = os.open(path, _APPEND)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return b""
        last = b""
        size = os.fstat(fd).st_size
        if size:
            last = os.pread(fd, 1, size - 1)
        data = (b"\n" if last not in (b"", b"\n", b"\r") else b"") + tail
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    old.raw = now
    return tail


def _temp(path: Path, data: bytes, mode: int) -> Path:
    """A fsynced temp file beside ``path`` (a dot-name: never a note, never watched)."""
    tmp = path.parent / f".{path.name}.{secrets.token_hex(4)}.wmw-tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        os.fchmod(fd, mode)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        os.unlink(tmp)
        raise
    os.close(fd)
    return tmp


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _umask() -> int:
    # Read without a race: /proc has it on Linux; otherwise assume the common 022.
    with contextlib.suppress(OSError, ValueError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    return 0o022


def _load_exchange() -> Callable[..., int] | None:
    if sys.platform != "linux":
        return None
    try:
        fn = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):
        return None
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    fn.restype = ctypes.c_int
    return fn


_EXCHANGE = _load_exchange()


_UNSUPPORTED = (errno.EINVAL, errno.ENOSYS, errno.ENOTSUP)


def _disable_exchange() -> None:
    global _EXCHANGE
    _EXCHANGE = None


def _exchange(a: Path, b: Path) -> None:
    """Atomically swap the directory entries ``a`` and ``b`` (Linux renameat2)."""
    fn = _EXCHANGE
    assert fn is not None
    if fn(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return
    err = ctypes.get_errno()
    raise OSError(err, os.strerror(err), str(b))
