"""Both cores for a cold scan: ``map_in_order(items, work)`` is ``map(work, items)``, with
a forked helper process taking a share of the items when there are enough of them.

The engine's initial scan reads, parses and tokenizes every file, then indexes the results
in order (one writer). Here the caller's process keeps its place as that writer and works
through chunks of items itself, while the helper works on chunks handed to it ahead of time
and sends back their results (pickled) through a pipe; results are yielded in the order of
the items, so what the caller builds is exactly what a serial ``map`` gives.

The helper is a ``fork`` of the caller, so ``work`` may be any callable (a bound method of
an engine with its configuration and tokenizer) and nothing is imported again. ``fork`` is
used only where it is safe and cheap: Linux, a process with no other Python thread (a thread
holding a lock at the moment of the fork would leave the child deadlocked; the daemon, with
its server and watcher threads, always scans in one process), at least two CPUs, and enough
items to pay for the start (a few milliseconds) and the pickling.
Anything else, or a helper that cannot start, dies or fails on an item, falls back to doing
that work here: the result never depends on the helper.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import logging
import multiprocessing
import os
import pickle
import signal
import sys
import threading
import warnings
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from operator import attrgetter
from typing import Generic, TypeVar

log = logging.getLogger(__name__)

T = TypeVar("T")
R = TypeVar("R")

# Below this many items a helper does not pay for its start and the pickling (ADR-0018).
PARALLEL_MIN_ITEMS = 400
CHUNK_ITEMS = 32  # items per message: small enough to balance the two processes at the end
# The helper runs at a lower priority: it takes the CPU time nobody else wants, and on a busy
# machine it does not slow the caller, which holds the only path that cannot be shared.
HELPER_NICE = 10
AHEAD = 12  # chunks handed to the helper ahead: enough to cover a swap in the caller


def helper_possible() -> bool:
    """True when a forked helper is safe and could run beside this process."""
    if not sys.platform.startswith("linux") or threading.active_count() != 1:
        return False
    try:
        return len(os.sched_getaffinity(0)) >= 2
    except (AttributeError, OSError):
        return (os.cpu_count() or 1) >= 2


def map_in_order(
    items: Sequence[T], work: Callable[[T], R], *, min_items: int | None = None
) -> Iterator[R]:
    """``work(item)`` for each item, in order; with a forked helper when it pays."""
    threshold = PARALLEL_MIN_ITEMS if min_items is None else min_items
    if len(items) < max(threshold, 2 * CHUNK_ITEMS) or not helper_possible():
        return map(work, items)
    return _Shared(items, work).results()


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


def _dumps(obj: object) -> bytes:
    out = io.BytesIO()
    _Pickler(out, protocol=pickle.HIGHEST_PROTOCOL).dump(obj)
    return out.getbuffer().tobytes()


class _Shared(Generic[T, R]):
    """One caller and one forked helper sharing chunks of ``items``; the caller hands out
    the chunks (a counter only it keeps) and yields every result in order."""

    def __init__(self, items: Sequence[T], work: Callable[[T], R]) -> None:
        self.items = items
        self.work = work
        self.chunks = [
            (a, min(a + CHUNK_ITEMS, len(items))) for a in range(0, len(items), CHUNK_ITEMS)
        ]
        self.next_chunk = 0  # chunks are taken in order: all before this one are taken
        self.done: dict[int, list[R]] = {}
        self.sent: list[int] = []  # chunks handed to the helper, oldest first
        self.conn: Connection | None = None
        self.proc: BaseProcess | None = None

    def results(self) -> Iterator[R]:
        self._start()
        finished = False
        try:
            for n in range(len(self.chunks)):
                while n not in self.done:
                    self._advance(n)
                yield from self.done.pop(n)
            finished = True
        finally:
            self._stop(wait=finished)

    def _run(self, n: int) -> list[R]:
        a, b = self.chunks[n]
        return [self.work(item) for item in self.items[a:b]]

    def _start(self) -> None:
        ctx = multiprocessing.get_context("fork")
        mine, theirs = ctx.Pipe(duplex=True)
        proc = ctx.Process(
            target=self._serve, args=(theirs, mine), name="wikimem-scan", daemon=True
        )
        try:
            with warnings.catch_warnings():
                # Python 3.12+ may warn about a fork in a process with other threads. With
                # ``threading`` reporting none, any are native pools (numpy's BLAS), idle
                # here, and the helper never calls into them.
                warnings.simplefilter("ignore", DeprecationWarning)
                proc.start()
        except OSError as exc:
            log.info("scan helper not started (%s); scanning in one process", exc)
            mine.close()
            theirs.close()
            return
        theirs.close()
        self.conn, self.proc = mine, proc
        self._hand_out()

    def _serve(self, conn: Connection, callers_end: Connection) -> None:
        """The helper: run the chunks handed over, in order, and send their results back
        until told to stop or the caller is gone. Before each chunk it reads every message
        waiting, so a chunk the caller took back is skipped. A chunk that fails is reported,
        not sent: the caller runs it again itself (and meets the error a serial scan would)."""
        callers_end.close()  # else the caller's death would not end ``recv`` here
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the caller's to handle
        with contextlib.suppress(OSError):
            os.nice(HELPER_NICE)
        todo: deque[int] = deque()
        try:
            while True:
                while not todo or conn.poll():
                    message = conn.recv()
                    if message is None:
                        return
                    if message >= 0:
                        todo.append(message)
                    elif -message - 1 in todo:
                        todo.remove(-message - 1)  # taken back
                n = todo.popleft()
                try:
                    payload = _dumps((n, self._run(n)))
                except Exception:
                    payload = _dumps((n, None))
                conn.send_bytes(payload)
        except (EOFError, OSError):
            pass  # the caller is gone

    def _hand_out(self) -> None:
        """Keep ``AHEAD`` chunks handed to the helper."""
        while self.conn is not None and len(self.sent) < AHEAD and not self._all_taken():
            if not self._tell(self.next_chunk):
                return
            self.sent.append(self.next_chunk)
            self.next_chunk += 1

    def _tell(self, message: int) -> bool:
        """Send the helper a chunk to run (``n``) or to skip (``-n - 1``); False if it is gone."""
        if self.conn is None:
            return False
        try:
            self.conn.send(message)
        except OSError:
            self._lost()
            return False
        return True

    def _advance(self, want: int) -> None:
        """Make progress towards chunk ``want`` (the next to yield) without ever waiting:
        take a result the helper has sent; else run the next free chunk here, unless
        ``AHEAD`` chunks already wait for ``want``; else take a chunk back from the helper
        and run it here: the newest (not started yet, most likely) at the end of the scan,
        ``want`` itself when too much waits for it. So the caller is never slower than alone
        by more than about one chunk, however little CPU time the helper gets, and holds at
        most ``AHEAD`` chunks of results it cannot use yet."""
        if self.conn is not None and self.conn.poll():
            self._receive()
        elif not self._all_taken() and len(self.done) < AHEAD:
            n = self.next_chunk
            self.next_chunk += 1
            self.done[n] = self._run(n)
        elif self.sent:
            n = self.sent.pop(0 if len(self.done) >= AHEAD else -1)
            self._tell(-n - 1)
            self.done[n] = self._run(n)
        else:  # the helper is gone: ``want`` is the next free chunk
            n = self.next_chunk
            self.next_chunk += 1
            self.done[n] = self._run(n)
        self._hand_out()

    def _receive(self) -> None:
        """One result from the helper (waiting for it); one for a chunk taken back is dropped."""
        assert self.conn is not None
        try:
            n, results = pickle.loads(self.conn.recv_bytes())
        except (EOFError, OSError):
            self._lost()
            return
        if n in self.sent:
            self.sent.remove(n)
            self.done[n] = self._run(n) if results is None else results

    def _all_taken(self) -> bool:
        return self.next_chunk >= len(self.chunks)

    def _lost(self) -> None:
        """The helper is gone: the chunks it held are run here."""
        self._stop(wait=False)
        for n in self.sent:
            self.done[n] = self._run(n)
        self.sent.clear()

    def _stop(self, *, wait: bool) -> None:
        """Tell the helper to stop and reap it (killed at once unless ``wait``)."""
        conn, proc, self.conn, self.proc = self.conn, self.proc, None, None
        if conn is not None:
            with contextlib.suppress(OSError):
                conn.send(None)
            conn.close()
        if proc is not None:
            proc.join(timeout=5 if wait else 0)
            if proc.is_alive():
                proc.kill()
                proc.join()
