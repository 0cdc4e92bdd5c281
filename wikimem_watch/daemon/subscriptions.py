"""Change feed: every index change as entry ids, to subscribers and to the journal.

``ChangeFeed.apply(paths)`` is how the daemon applies files (the writer thread and the
write path alike): under the engine's ``apply_lock`` it notes what those files held, applies
them, and compares, so each change is known as added / updated / removed entry ids with the
generation that holds it. External changes (``external=True``: the watcher, the safety
rescan) are journaled one line per file; a state one of our own writes left is not external
(until a person's save of that file is applied after it: the file back at it is an undo).

Subscribers (``subscribe {paths?, kinds?, q?}``) get ``changed`` notifications on their
connection. Each has a bounded queue and its own sender thread: publishing never blocks,
and a subscriber whose queue is full is dropped (its connection closed), never a drag on
the daemon. ``CURRENT.peer`` is the connection of the request being answered (the server
sets it per thread), which is how ``subscribe`` knows where to send.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import logging
import queue
import socket
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from typing import Protocol

from ..core.engine import ApplyStats, Engine, indexed_text
from ..core.models import Entry
from ..core.vault import glob_match
from ..errors import BadRequest, WatchError
from .journal import Journal

log = logging.getLogger(__name__)

QUEUE_MAX = 256  # notifications a subscriber may lag behind before it is dropped
PER_CONNECTION_MAX = 16  # subscriptions one connection may hold (each has a sender thread)
CURRENT = threading.local()


class Peer(Protocol):
    """The part of a server connection a subscription uses."""

    sock: socket.socket
    send_lock: threading.Lock
    idle_exempt: bool
    on_close: list[Callable[[], None]]
    after_reply: list[Callable[[], None]]  # run once the reply now being made is sent


@dataclass(slots=True, eq=False)
class Subscription:
    id: str
    peer: Peer
    paths: tuple[str, ...] = ()
    kinds: tuple[str, ...] = ()
    terms: frozenset[str] | None = None
    out: queue.Queue[bytes | None] = field(default_factory=lambda: queue.Queue(QUEUE_MAX))
    dropped: bool = False
    started: threading.Event = field(default_factory=threading.Event)  # the reply is out
    on_close: Callable[[], None] | None = None  # what it put on peer.on_close

    def wants(self, entry: Entry) -> bool:
        if self.kinds and entry.kind not in self.kinds:
            return False
        return not self.paths or glob_match(entry.path, self.paths)


@dataclass(slots=True)
class _Held:
    """Files made (path, text hash, ours) and gone (path, text hash), not journaled yet."""

    made: list[tuple[str, str, bool]] = field(default_factory=list)
    gone: list[tuple[str, str]] = field(default_factory=list)


class ChangeFeed:
    """Applies files to the engine and tells subscribers and the journal what changed."""

    def __init__(
        self,
        engine: Engine,
        journal: Journal | None = None,
        is_own: Callable[[str, str], bool] | None = None,
        *,
        between_applies: Callable[[], contextlib.AbstractContextManager[object]] | None = None,
        max_connections: int = 256,
        own_mark: Callable[[], int] | None = None,
        not_own_before: Callable[[str, int], None] | None = None,
    ) -> None:
        self.engine = engine
        self.journal = journal
        self.is_own = is_own
        # The writer's (VaultWriter): a person's save applied makes our earlier states theirs.
        self.own_mark = own_mark
        self.not_own_before = not_own_before
        # Held while a subscription is made: no apply is half done then (the daemon's also
        # lets a cold scan give way after its batch in hand, as it does for a write).
        self._between_applies = between_applies or (lambda: engine.apply_lock)
        # Subscribed connections are never closed for idleness or evicted: at most half of
        # the daemon's connections, so the others can still get in.
        self.max_subscribed = max(1, max_connections // 2)
        self._subs: dict[str, Subscription] = {}
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self.dropped = 0
        self._held: _Held | None = None  # inside ``pairing_moves``: what its applies made and
        # removed, journaled at its end

    # --------------------------------------------------------------------- apply

    def apply(
        self,
        paths: Iterable[str],
        *,
        external: bool = False,
        stop: Callable[[], bool] | None = None,
    ) -> ApplyStats:
        engine = self.engine
        with engine.apply_lock:  # only appliers change `files`: reading it here is safe
            batch = engine.with_links(paths)  # a note's symlinks change with it
            watching = bool(self._subs)
            mark = self.own_mark() if external and self.own_mark is not None else 0
            hashes = {p: engine.files[p].text_hash for p in batch if p in engine.files}
            targets = {p: engine.files[p].target for p in hashes}
            unread = {p for p in batch if p in engine.skipped}  # there, but not indexed
            before = self._entries(batch) if watching else {}
            stats = engine.apply(batch, stop)
            generation = engine.generation
            # A note now skipped (made binary, too big, unreadable) lost its entries too.
            unindexed = [p for p in stats.skipped if p in hashes]
            touched = [*stats.changed, *stats.removed, *unindexed]
            after = self._entries(touched) if watching and touched else {}
            new_hashes = {p: engine.files[p].text_hash for p in stats.changed if p in engine.files}
            # Still under the lock, so notifications and journal lines leave in the order
            # the changes were applied (appliers run one at a time).
            if watching and touched:
                before = {i: e for i, e in before.items() if e.path in set(touched)}
                self._publish(generation, before, after)
            if external and self.journal is not None and touched:
                # A symlink to a note changed with it is told by the note's own line.
                applied = set(batch)
                links = {p for p in touched if self._target(p) in applied}
                links.update(p for p in unindexed if targets[p] in applied)  # a record gone
                self._journal(hashes, new_hashes, stats, links, unindexed, unread)
                if self.not_own_before is not None:
                    for p in [*stats.changed, *unindexed]:
                        if not self._own(p, new_hashes):
                            self.not_own_before(p, mark)
        return stats

    def _target(self, rel: str) -> str | None:
        record = self.engine.files.get(rel)
        return None if record is None else record.target

    def _entries(self, paths: Iterable[str]) -> dict[str, Entry]:
        engine = self.engine
        return {e.id: e for p in paths if p in engine.files for e in engine.entries_of(p)}

    def _journal(
        self,
        old: dict[str, str],
        new: dict[str, str],
        stats: ApplyStats,
        links: set[str],
        unindexed: list[str],
        unread: set[str],
    ) -> None:
        assert self.journal is not None
        made = [
            (p, new.get(p, ""), self._own(p, new))
            for p in stats.changed
            if p not in old and p not in unread and p not in links
        ]
        gone = [(p, old[p]) for p in stats.removed if p in old]
        if self._held is not None:
            self._held.made += made
            self._held.gone += gone
            made, gone = [], []
        deletes = self._made(made, gone)
        for p in stats.changed:  # or read again: no longer binary, too big, unreadable
            if (p in old or p in unread) and p not in links and not self._own(p, new):
                self.journal.external("edit", p)
        for p in unindexed:  # its text changed so that it is no note (or it went unreadable)
            if p not in links:
                self.journal.external("edit", p)
        for p in deletes:
            self.journal.external("delete", p)

    def _made(self, made: list[tuple[str, str, bool]], gone: list[tuple[str, str]]) -> list[str]:
        """Journal the files ``made`` (path, text hash, ours) as moves of files ``gone``
        (path, text hash) or as creates; the gone files that no move took, to be deleted."""
        assert self.journal is not None
        # Every removed file by its text: notes may share one (two stubs, a note and its
        # symlink), and each removal is either the source of one move or a delete.
        by_text: dict[str, list[str]] = {}
        for p, digest in gone:
            by_text.setdefault(digest, []).append(p)
        moved: set[str] = set()
        for p, digest, own in made:
            sources = by_text.get(digest)
            if sources:
                name = p.rsplit("/", 1)[-1]  # of the same text: the one of the same name
                src = next((s for s in sources if s.rsplit("/", 1)[-1] == name), sources[0])
                sources.remove(src)
                moved.add(src)
                self.journal.external("move", p, **{"from": src})
            elif not own:
                self.journal.external("create", p)
        return [p for p, _ in gone if p not in moved]

    @contextlib.contextmanager
    def pairing_moves(self) -> Iterator[None]:
        """Journal the creates and deletes of the external applies inside it at its end,
        paired into moves across them: a burst applied in chunks (a folder of many notes
        renamed) has a note's old and new path in different chunks."""
        self._held = held = _Held()
        try:
            yield
        finally:
            self._held = None
            if self.journal is not None and (held.made or held.gone):
                with self.engine.apply_lock:  # in order with the lines of other applies
                    for p in self._made(held.made, held.gone):
                        self.journal.external("delete", p)

    def _own(self, rel: str, new: dict[str, str]) -> bool:
        return self.is_own is not None and rel in new and self.is_own(rel, new[rel])

    # ------------------------------------------------------------- subscriptions

    def subscribe(
        self, peer: Peer, paths: tuple[str, ...], kinds: tuple[str, ...], q: str | None
    ) -> tuple[str, int]:
        """A new subscription's id, and the generation it starts from: every change after
        it is notified (it is made between two applies, never during one)."""
        terms = None
        if q is not None:
            terms = frozenset(self.engine.tokenizer(q))
            if not terms:
                raise BadRequest(f'"q" {q!r} has no searchable words')
        sub = Subscription(f"s{next(self._ids)}", peer, paths, kinds, terms)
        with self._between_applies():
            with self._lock:
                mine = sum(1 for s in self._subs.values() if s.peer is peer)
                peers = {id(s.peer) for s in self._subs.values()}
                if mine >= PER_CONNECTION_MAX:
                    raise BadRequest(
                        f"a connection holds at most {PER_CONNECTION_MAX} subscriptions; "
                        "unsubscribe one, or widen one's paths and kinds"
                    )
                if id(peer) not in peers and len(peers) >= self.max_subscribed:
                    raise WatchError(
                        f"{len(peers)} connections hold subscriptions, the most this daemon "
                        "keeps (half of max_connections); retry later"
                    )
                self._subs[sub.id] = sub
            generation = self.engine.generation
        peer.idle_exempt = True  # silent by design: never closed for idleness
        sub.on_close = lambda: self._remove(sub)
        peer.on_close.append(sub.on_close)
        peer.after_reply.append(sub.started.set)  # notifications wait for the reply
        threading.Thread(target=self._send_loop, args=(sub,), name="notify", daemon=True).start()
        return sub.id, generation

    def unsubscribe(self, peer: Peer, sub_id: str) -> bool:
        with self._lock:
            sub = self._subs.get(sub_id)
            if sub is None or sub.peer is not peer:
                return False
        self._remove(sub)
        # Not in _remove: that also runs from the connection's close, iterating on_close.
        if sub.on_close in peer.on_close:  # else each subscribe left one there for good
            peer.on_close.remove(sub.on_close)
        return True

    def count(self) -> int:
        with self._lock:
            return len(self._subs)

    def _remove(self, sub: Subscription) -> None:
        with self._lock:
            self._subs.pop(sub.id, None)
            if not any(s.peer is sub.peer for s in self._subs.values()):
                sub.peer.idle_exempt = False  # its last one: idle timeout and eviction again
        sub.dropped = True  # its sender sends nothing more, however much is queued
        sub.started.set()
        with contextlib.suppress(queue.Full):
            sub.out.put_nowait(None)  # wakes its sender, to end

    def _publish(self, generation: int, before: dict[str, Entry], after: dict[str, Entry]) -> None:
        added = [e for i, e in after.items() if i not in before]
        updated = [e for i, e in after.items() if i in before and _changed(before[i], e)]
        removed = [e for i, e in before.items() if i not in after]
        if not (added or updated or removed):
            return
        with self._lock:
            subs = list(self._subs.values())
        for sub in subs:
            message = self._message(sub, generation, added, updated, removed)
            if message is None:
                continue
            try:
                sub.out.put_nowait(message)
            except queue.Full:
                self._drop(sub)

    def _message(
        self,
        sub: Subscription,
        generation: int,
        added: list[Entry],
        updated: list[Entry],
        removed: list[Entry],
    ) -> bytes | None:
        a = [e for e in added if sub.wants(e) and self._matches(sub, e)]
        u = [e for e in updated if sub.wants(e) and self._matches(sub, e)]
        r = [e for e in removed if sub.wants(e)]
        if sub.terms is not None and not (a or u):
            return None  # with q: only when an added or changed entry matches
        if not (a or u or r):
            return None
        params = {
            "subscription": sub.id,
            "generation": generation,
            "added": [e.id for e in a],
            "updated": [e.id for e in u],
            "removed": [e.id for e in r],
        }
        msg = {"jsonrpc": "2.0", "method": "changed", "params": params}
        return json.dumps(msg, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"

    def _matches(self, sub: Subscription, entry: Entry) -> bool:
        if sub.terms is None:
            return True
        text = indexed_text(entry, self.engine.config.heading_weight)
        return not sub.terms.isdisjoint(self.engine.tokenizer(text))

    def _drop(self, sub: Subscription) -> None:
        if sub.dropped:
            return
        sub.dropped = True
        self.dropped += 1
        log.info("dropping subscriber %s: it does not read its notifications", sub.id)
        with self._lock:
            self._subs.pop(sub.id, None)
        with contextlib.suppress(OSError):
            sub.peer.sock.shutdown(socket.SHUT_RDWR)  # its connection thread cleans up

    def _send_loop(self, sub: Subscription) -> None:
        sub.started.wait()
        while True:
            message = sub.out.get()
            if message is None or sub.dropped:
                return
            try:
                with sub.peer.send_lock:
                    sub.peer.sock.sendall(message)
            except OSError:
                self._drop(sub)
                return


def _changed(old: Entry, new: Entry) -> bool:
    """An update: anything but the entry's line (a line above it added or removed). Not
    its heading and text alone: a note's tags, title, aliases, date or an item's metadata
    change its entries too (what they match, how they rank and read)."""
    return old != new if old.line == new.line else replace(old, line=new.line) != new
