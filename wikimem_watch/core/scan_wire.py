"""How a cold scan's caller and its helper process talk (``core/scan.py``): results pickled
cheaply, messages framed on two pipes, and a helper started as a new interpreter.

Commands (caller → helper) are 8-byte chunk numbers: ``n`` to run chunk ``n``, ``-n - 1``
to skip it, ``STOP`` to end. Results (helper → caller) are an 8-byte length and then the
pickled ``(n, results)``; ``results`` is ``None`` for a chunk that failed there, and a new
interpreter's first message is ``(READY, None)``.
"""

from __future__ import annotations

import dataclasses
import fcntl
import io
import logging
import os
import pickle
import struct
import subprocess
import sys
from collections.abc import Callable
from operator import attrgetter

COMMAND = struct.Struct("<q")
LENGTH = struct.Struct("<Q")
STOP = -(2**63)
READY = -1  # the chunk number of a new interpreter's first message: it has read its work
PIPE_BYTES = 8 << 20  # the result pipe's room asked for (the system may cap it)
_MAIN = "import sys; from wikimem_watch.core.scan import serve; serve(*map(int, sys.argv[1:]))"


class _Pickler(pickle.Pickler):
    """Pickles a dataclass as a call of its class with its field values: about half the
    time of the default (a ``__setstate__`` that sets each slot in Python) for entries."""

    def reducer_override(self, obj: object) -> tuple[type, tuple[object, ...]]:
        cls = type(obj)
        try:
            get = _FIELDS[cls]
        except KeyError:
            get = _FIELDS[cls] = _field_getter(cls)
        if get is None:
            return NotImplemented  # type: ignore[no-any-return]  # pickle's own reduction
        return cls, get(obj)


Getter = Callable[[object], tuple[object, ...]]
_FIELDS: dict[type, Getter | None] = {}


def _field_getter(cls: type) -> Getter | None:
    """A getter of the field values ``cls(*values)`` rebuilds an instance from; ``None``
    for anything else (not a dataclass, a field not in ``__init__``, a ``__post_init__``)."""
    if not dataclasses.is_dataclass(cls) or hasattr(cls, "__post_init__"):
        return None
    fields = dataclasses.fields(cls)
    if not fields or not all(f.init and f.kw_only is not True for f in fields):
        return None
    getter = attrgetter(*(f.name for f in fields))
    if len(fields) == 1:
        return lambda obj: (getter(obj),)
    return getter


def dumps(obj: object) -> bytes:
    out = io.BytesIO()
    _Pickler(out, protocol=pickle.HIGHEST_PROTOCOL).dump(obj)
    return out.getbuffer().tobytes()


def message(n: int, results: object) -> bytes:
    """One result message: the length, then the pickled ``(n, results)``."""
    payload = dumps((n, results))
    return LENGTH.pack(len(payload)) + payload


def start_interpreter(setup: bytes) -> tuple[subprocess.Popen[bytes], int, int]:
    """Start ``core.scan.serve`` in a new interpreter (safe beside other threads, unlike a
    fork), handing it ``setup`` in a memory file, so nothing here waits for it to start.
    Returns the process, the write end of its command pipe and the non-blocking read end of
    its result pipe; raises ``OSError`` when it cannot be started."""
    if not sys.executable:
        raise OSError("no Python executable to start")  # an embedded interpreter
    memory = os.memfd_create("wikimem-scan")
    commands_r, commands_w = os.pipe()
    replies_r, replies_w = os.pipe()
    ours, theirs = (commands_w, replies_r), (memory, commands_r, replies_w)
    try:
        write_all(memory, setup)
        # -P and the root as its directory: nothing is imported from where the caller runs,
        # which may be a vault synced from elsewhere (ADR-0010).
        proc = subprocess.Popen(
            [sys.executable, "-P", "-c", _MAIN, *map(str, theirs)],
            cwd=os.sep,
            pass_fds=theirs,
            env={**os.environ, "PYTHONPATH": _python_path()},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            start_new_session=True,  # a Ctrl-C is the caller's, even while it imports
        )
    except OSError:
        for fd in ours:
            os.close(fd)
        raise
    finally:
        for fd in theirs:
            os.close(fd)
    os.set_blocking(replies_r, False)
    widen(replies_r)
    return proc, commands_w, replies_r


def read_setup(memory: int) -> bytes:
    """What ``start_interpreter`` handed over, in the new interpreter."""
    setup = bytearray()
    while chunk := os.pread(memory, 1 << 20, len(setup)):
        setup += chunk
    os.close(memory)
    return bytes(setup)


def log_levels() -> dict[str, int]:
    """The levels set on this process's loggers ("" for the root), for a new interpreter."""
    loggers = logging.Logger.manager.loggerDict.items()
    levels = {name: lg.level for name, lg in loggers if isinstance(lg, logging.Logger)}
    return {"": logging.getLogger().level} | {name: lvl for name, lvl in levels.items() if lvl}


def set_log_levels(levels: dict[str, int]) -> None:
    """What the caller's logging lets through, this one does: a warning about a note is
    printed as the caller would print it, and a quieted logger stays quiet."""
    for name, level in levels.items():
        logging.getLogger(name or None).setLevel(level)


def _python_path() -> str:
    """``PYTHONPATH`` for a new interpreter: this package's parent first, so it imports the
    same code as this process whether installed, editable or run from a checkout."""
    here = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    rest = os.environ.get("PYTHONPATH")
    return here + (os.pathsep + rest if rest else "")


def widen(fd: int) -> None:
    """Give a pipe room for several chunks' results (Linux: up to ``pipe-max-size``, 1 MiB by
    default): with the default 64 KiB, the helper waited on every write until the caller,
    busy with a chunk or indexing, read the previous one, and ran at half speed."""
    for size in (PIPE_BYTES, 1 << 20):
        try:
            fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, size)
            return
        except (AttributeError, OSError):
            continue


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
