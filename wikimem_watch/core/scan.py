"""Both cores for a cold scan: ``map_in_order(items, work)`` is ``map(work, items)``, with
a helper process taking a share of the items when there are enough of them.

The engine's initial scan reads, parses and tokenizes every file, then indexes the results
in order (one writer). Here the caller's process keeps its place as that writer and works
through chunks of items itself, while the helper works on chunks handed to it a little
ahead of the caller and sends their results back (pickled) through a pipe. Results are
yielded in the order of the items, so what the caller builds is exactly what a serial
``map`` gives. The caller waits on the helper a few chunks' time at most: a chunk the
helper is late with is taken back and run here, and a helper late twice is given up.

The helper is a ``fork`` of the caller where that is safe: Linux, a process with no other
Python thread (a thread holding a lock at the moment of the fork would leave the child
deadlocked), at least two CPUs, and enough items to pay for the start (a few milliseconds)
and the pickling; then ``work`` may be any callable and nothing is imported again. In a
process with other threads (the daemon, with its server and watcher threads) the helper is a
new interpreter instead, started only for many items (it imports the parser first) and only
when ``work`` pickles: it is sent ``items`` and ``work`` once, in a memory file. Anything
else, or a helper that cannot start, dies or fails on an item, falls back to doing that work
here: the result never depends on the helper (ADR-0019). How the two talk, and how a new
interpreter is started, is ``core/scan_wire.py``.
"""

from __future__ import annotations

import contextlib
import logging
import os
import pickle
import select
import signal
import subprocess
import sys
import threading
import time
import warnings
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Generic, TypeVar

from . import scan_wire as wire

if TYPE_CHECKING:
    from multiprocessing.process import BaseProcess

log = logging.getLogger(__name__)

T = TypeVar("T")
R = TypeVar("R")

# Below this many items a helper does not pay for its start and the pickling (ADR-0019).
PARALLEL_MIN_ITEMS = 400
# A helper started as a new interpreter (beside other threads) first spends ~0.1-0.2 s of its
# own CPU time on imports; below this many items it would join too late to take a share.
EXEC_MIN_ITEMS = 1000
CHUNK_ITEMS = 32  # items per message: small enough to balance the two processes at the end
# The helper is handed chunks at least LEAD chunks past the one the caller needs next, so it
# has them done before the caller gets there, and at most AHEAD at a time (enough to keep it
# busy through a swap of the caller's, when nothing is handed out).
LEAD = 8
AHEAD = 8
# The helper runs at a lower priority: on a busy machine it takes the CPU time left over and
# does not slow the caller, which holds the one path (indexing, in order) that cannot be shared.
# A chunk the helper is late with is waited for WAIT_CHUNKS times as long as one takes here
# (on average), then taken back; a helper late LATE_LIMIT times is given up.
HELPER_NICE = 10
WAIT_CHUNKS = 2.0
LATE_LIMIT = 2


def helper_kind(items: int) -> str | None:
    """How a helper for ``items`` items would start: ``"fork"`` (Linux, no other Python
    thread), ``"exec"`` (a new interpreter, beside other threads, for ``EXEC_MIN_ITEMS`` or
    more), or ``None`` (no helper; also when no CPU is free for one)."""
    if not sys.platform.startswith("linux") or not _cpu_free():
        return None
    if threading.active_count() == 1:
        return "fork"
    return "exec" if items >= EXEC_MIN_ITEMS else None


def _cpu_free() -> bool:
    """At least two CPUs, and the load average (this process included) leaves half of one
    idle: on a machine already busy, a helper would only take time from the caller."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    return cpus >= 2 and os.getloadavg()[0] < cpus - 0.5


def map_in_order(
    items: Sequence[T], work: Callable[[T], R], *, min_items: int | None = None
) -> Iterator[R]:
    """``work(item)`` for each item, in order; with a helper process when it pays."""
    threshold = PARALLEL_MIN_ITEMS if min_items is None else min_items
    kind = helper_kind(len(items)) if len(items) >= max(threshold, 2 * CHUNK_ITEMS) else None
    if kind is None:
        return map(work, items)
    return _Shared(items, work, kind).results()


class _Shared(Generic[T, R]):
    """One caller and one forked helper sharing chunks of ``items``; the caller alone knows
    which chunk is whose, hands the helper its chunks, and yields every result in order.

    Two pipes (``core/scan_wire.py``): the caller writes commands, the helper writes
    results. The caller reads results without blocking, a piece at a time, so a helper that
    gets little CPU time cannot hold it up mid-message.
    """

    def __init__(
        self, items: Sequence[T], work: Callable[[T], R], kind: str = "fork", size: int = 0
    ) -> None:
        self.items = items
        self.work = work
        self.kind = kind
        self.ready = kind == "fork"  # a new interpreter says when it has read its work
        self.size = size or CHUNK_ITEMS  # items per chunk, the same on both sides
        self.chunks = [(a, min(a + self.size, len(items))) for a in range(0, len(items), self.size)]
        self.taken = bytearray(len(self.chunks))  # run here, handed to the helper, or done
        self.near = 0  # no chunk before this one is free
        self.want = 0  # the chunk to yield next
        self.done: dict[int, list[R]] = {}
        self.sent: list[int] = []  # chunks handed to the helper, ascending
        self.proc: BaseProcess | subprocess.Popen[bytes] | None = None
        self.commands = -1  # the write end of the command pipe (-1: no helper)
        self.replies = -1  # the read end of the result pipe, non-blocking
        self.inbox = bytearray()
        self.chunk_s = 0.0  # how long a chunk takes here (a moving average)
        self.late = 0  # chunks taken back from the helper after waiting for them

    def results(self) -> Iterator[R]:
        self._start()
        try:
            for n in range(len(self.chunks)):
                self.want = n
                while n not in self.done:
                    self._advance(n)
                yield from self.done.pop(n)
        finally:
            self._stop()

    def _run(self, n: int) -> list[R]:
        self.taken[n] = 1
        a, b = self.chunks[n]
        started = time.perf_counter()
        results = [self.work(item) for item in self.items[a:b]]
        took = time.perf_counter() - started
        self.chunk_s = took if not self.chunk_s else 0.8 * self.chunk_s + 0.2 * took
        return results

    # ------------------------------------------------------------------ the caller

    def _start(self) -> None:
        if self.kind == "exec":
            self._start_exec()
            return
        import multiprocessing  # here: ~5 ms to import, and only a cold scan forks a helper

        commands_r, commands_w = os.pipe()
        replies_r, replies_w = os.pipe()
        proc = multiprocessing.get_context("fork").Process(
            target=self._serve,
            args=(commands_r, replies_w, (commands_w, replies_r)),
            name="wikimem-scan",
            daemon=True,
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
            for fd in (commands_r, commands_w, replies_r, replies_w):
                os.close(fd)
            return
        os.close(commands_r)
        os.close(replies_w)
        os.set_blocking(replies_r, False)
        wire.widen(replies_r)
        self.proc, self.commands, self.replies = proc, commands_w, replies_r
        self._hand_out()

    def _start_exec(self) -> None:
        """Start the helper as a new interpreter (safe beside other threads); chunks are
        handed to it once it says it has read its work."""
        try:
            setup = wire.dumps((self.items, self.work, self.size, wire.log_levels()))
        except (pickle.PicklingError, AttributeError, TypeError) as exc:
            log.debug("scan helper not started (the work does not pickle: %s)", exc)
            return
        try:
            self.proc, self.commands, self.replies = wire.start_interpreter(setup)
        except (AttributeError, OSError) as exc:  # AttributeError: no memfd_create
            log.info("scan helper not started (%s); scanning in one process", exc)

    def _free(self, start: int) -> int | None:
        """The first chunk from ``start`` on that nobody has taken."""
        n = self.taken.find(0, start)
        return None if n < 0 else n

    def _hand_out(self) -> None:
        """Keep ``AHEAD`` chunks handed to the helper, each ``LEAD`` or more past ``want``
        (near the end of the items, the free chunks past ``want``)."""
        while self.proc is not None and self.ready and len(self.sent) < AHEAD:
            start = self.want + LEAD
            n = self._free(start if start < len(self.chunks) else self.want + 1)
            if n is None or not self._tell(n):
                return
            self.taken[n] = 1
            self.sent.append(n)

    def _tell(self, command: int) -> bool:
        """Send the helper a command; False (and the helper given up) when it is gone."""
        if self.proc is None:
            return False
        try:
            os.write(self.commands, wire.COMMAND.pack(command))
        except OSError:
            self._lost()
            return False
        return True

    def _advance(self, want: int) -> None:
        """Make progress towards chunk ``want``, the next to yield: take a result the helper
        has sent; else run the first free chunk here (``want`` itself, unless the helper has
        it), holding at most ``LEAD + AHEAD`` chunks ahead of ``want``; else wait up to
        ``WAIT_CHUNKS`` chunks' time for the helper to send ``want``, then take it back and
        run it here (after ``LATE_LIMIT`` such chunks, do without the helper). So the caller
        waits for the helper a few chunks' time at most, however little CPU time the helper
        gets, and holds a bounded number of results it cannot use yet."""
        if self._receive(0.0):
            pass
        elif (n := self._free(want)) is not None and n < want + LEAD + AHEAD:
            self.done[n] = self._run(n)
        elif want in self.sent:
            if not self._receive(max(WAIT_CHUNKS * self.chunk_s, 0.002)) and want in self.sent:
                self.sent.remove(want)
                self._tell(-want - 1)  # taken back
                self.late += 1
                if self.late >= LATE_LIMIT:  # it gets too little CPU time to be of use
                    log.debug("scan helper too slow; the rest is scanned in one process")
                    self._lost()
                self.done[want] = self._run(want)
        else:  # the helper is gone and ``want`` is free
            self.done[want] = self._run(want)
        self._hand_out()

    def _receive(self, wait_s: float) -> bool:
        """Take one result the helper has sent in full, waiting up to ``wait_s`` for it; a
        result for a chunk taken back is dropped, one that failed there is run here."""
        if self.proc is None:
            return False
        deadline = time.monotonic() + wait_s
        while True:
            gone = self._read()
            if len(self.inbox) >= wire.LENGTH.size:
                (size,) = wire.LENGTH.unpack_from(self.inbox)
                end = wire.LENGTH.size + size
                if len(self.inbox) >= end:
                    n, results = pickle.loads(self.inbox[wire.LENGTH.size : end])
                    del self.inbox[:end]
                    if n == wire.READY:
                        self.ready = True
                    elif n in self.sent:
                        self.sent.remove(n)
                        a, b = self.chunks[n]
                        fits = results is not None and len(results) == b - a
                        self.done[n] = results if fits else self._run(n)
                    return True
            if gone:
                self._lost()
                return False
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.replies], [], [], left)[0]:
                return False

    def _read(self) -> bool:
        """Read what the helper has written so far; True at its end (it exited)."""
        try:
            while chunk := os.read(self.replies, 1 << 20):
                self.inbox += chunk
        except BlockingIOError:
            return False
        except OSError:
            pass
        return True

    def _lost(self) -> None:
        """The helper is gone: the chunks it held are run here."""
        self._stop()
        for n in self.sent:
            self.done[n] = self._run(n)
        self.sent.clear()

    def _stop(self) -> None:
        """Stop the helper: its work is done or no longer wanted, so it is not waited for."""
        proc, self.proc = self.proc, None
        if proc is None:
            return
        with contextlib.suppress(OSError):
            os.write(self.commands, wire.COMMAND.pack(wire.STOP))
        for fd in (self.commands, self.replies):
            os.close(fd)
        self.commands = self.replies = -1
        if isinstance(proc, subprocess.Popen):
            try:
                proc.wait(timeout=0.05)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            return
        proc.join(timeout=0.05)
        if proc.is_alive():
            proc.kill()
            proc.join()

    # ------------------------------------------------------------------ the helper

    def _serve(self, commands: int, replies: int, callers: tuple[int, ...]) -> None:
        """The helper: run the chunks handed over, in order, and send their results back
        until told to stop or the caller is gone. Before each chunk it reads every command
        waiting, so a chunk the caller took back is skipped. A chunk that fails is reported,
        not sent: the caller runs it again itself (and meets the error a serial scan would)."""
        for fd in callers:
            os.close(fd)  # else the caller's death would not end a read here
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the caller's to handle
        with contextlib.suppress(OSError):
            os.nice(HELPER_NICE)
        todo: deque[int] = deque()
        try:
            while True:
                while not todo or select.select([commands], [], [], 0)[0]:
                    data = os.read(commands, 4096)  # whole commands: each write is atomic
                    if not data:
                        return
                    for (command,) in wire.COMMAND.iter_unpack(data):
                        if command == wire.STOP:
                            return
                        if command >= 0:
                            todo.append(command)
                        elif -command - 1 in todo:
                            todo.remove(-command - 1)  # taken back
                n = todo.popleft()
                try:
                    reply = wire.message(n, self._run(n))
                except Exception:
                    reply = wire.message(n, None)
                wire.write_all(replies, reply)
        except OSError:
            pass  # the caller is gone


def serve(memory: int, commands: int, replies: int) -> None:
    """A helper started as a new interpreter (``scan_wire.start_interpreter``): read
    ``items`` and ``work``, say so, then serve the caller's commands as a forked helper does."""
    import gc

    gc.disable()  # as in a forked helper of a scan: many objects, no cycles, a short life
    logging.basicConfig(format="wikimem-watch: %(levelname)s %(message)s")
    try:
        items, work, size, levels = pickle.loads(wire.read_setup(memory))
    except (pickle.UnpicklingError, ImportError, AttributeError) as exc:
        # Its code differs from the caller's: the caller, seeing it gone, does the work.
        log.warning("scan helper: cannot read the work it was sent (%s)", exc)
        return
    wire.set_log_levels(levels)
    shared: _Shared[object, object] = _Shared(items, work, "exec", size)
    try:
        wire.write_all(replies, wire.message(wire.READY, None))
    except OSError:
        return  # the caller is gone
    shared._serve(commands, replies, ())
