"""Other machines' daemons sharing a synced cache dir: who they are and who embeds what.

When a vault is synced with its cache, an edit made on one machine reaches the other as a
changed file, and both daemons would embed it. To embed it once, each text has one *owner*
among the daemons that use the cache (rendezvous hashing over their ids): the owner embeds
at once; the others wait up to ``grace_s`` for the owner's segment to arrive, picking the
cache dir up meanwhile, and embed only what is still missing then (the owner may be off).
A daemon cannot know where an edit was made, and does not need to: whoever owns the text
embeds it, wherever it was typed. With no other daemon active, nothing ever waits.

Each daemon announces itself with ``peer-<id>.json`` in the cache dir (its id: a hash of
the host and the cache dir's path, so two copies of a vault on one machine are two peers);
the file is rewritten hourly while the daemon runs, and a peer whose file is older than
``ALIVE_S`` is gone. Peers count only while they are *active*: another machine's segment
arrived within ``ACTIVE_S`` (``VectorCache.last_arrival``), or a peer file is that recent (a
daemon that just started). A vault synced nightly therefore never makes an edit wait.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import re
import socket
import time
from pathlib import Path

from wikimem_watch.atomic import atomic_write

__all__ = ["ACTIVE_S", "ALIVE_S", "DEFAULT_GRACE_S", "Peers"]

log = logging.getLogger(__name__)

DEFAULT_GRACE_S = 3.0
ALIVE_S = 2 * 3600.0  # a peer file older than this: that daemon is gone
ANNOUNCE_S = 3600.0
ACTIVE_S = 600.0  # another machine's segment this recent: peers are active, wait for owners
PEER_FILE = re.compile(r"peer-([0-9a-f]{12})\.json")
BASE_OWNER_KEY = "the base rewrite"  # what the one daemon that rewrites the base owns


def peer_id(cache_dir: Path) -> str:
    """This daemon's id: stable per machine and cache dir, never equal on two of either."""
    machine = ""
    with contextlib.suppress(OSError):
        machine = Path("/etc/machine-id").read_text(encoding="ascii").strip()
    where = str(Path(cache_dir).resolve())
    raw = f"{socket.gethostname()}\0{machine}\0".encode() + os.fsencode(where)  # any path
    return hashlib.sha256(raw).hexdigest()[:12]


class Peers:
    """This daemon's id, the other live daemons' ids, and the owner of a text."""

    def __init__(self, cache_dir: Path, grace_s: float, *, own_id: str | None = None) -> None:
        self.cache_dir = Path(cache_dir)
        self.grace_s = grace_s
        self.id = own_id or peer_id(self.cache_dir)
        self._announced_at: float | None = None

    def announce(self) -> None:
        """Write ``peer-<id>.json`` if not written in the last hour (best effort)."""
        now = time.monotonic()
        if self._announced_at is not None and now - self._announced_at < ANNOUNCE_S:
            return
        self._announced_at = now
        seen = time.strftime("%Y-%m-%dT%H", time.gmtime())
        body = json.dumps({"peer": self.id, "seen": seen}).encode() + b"\n"
        try:
            if self.cache_dir.is_dir():
                atomic_write(self.cache_dir / f"peer-{self.id}.json", body)
        except OSError as exc:
            log.debug("cannot announce this daemon in %s: %s", self.cache_dir, exc)

    def others(self, within_s: float = ALIVE_S) -> list[str]:
        """Ids of the other daemons whose peer file changed within ``within_s``."""
        now = time.time()
        out: list[str] = []
        with contextlib.suppress(OSError):
            for path in self.cache_dir.iterdir():
                match = PEER_FILE.fullmatch(path.name)
                if match is None or match.group(1) == self.id:
                    continue
                with contextlib.suppress(OSError):
                    if now - path.stat().st_mtime < within_s:
                        out.append(match.group(1))
        return sorted(out)

    def rewrites_base(self, others: list[str]) -> bool:
        """Whether this daemon, and no other among ``others``, rewrites the shared base.

        A base rewrite is the one merge that depends on what a machine knows (its live
        entries, the rows it holds), not on the files alone: two daemons rewriting at once
        write two different bases, each then finds the other's full of duplicate (dead) rows
        and rewrites again, for ever (O(the vault) bytes, and a sync upload, per edit). One
        owner, by the same rendezvous hashing as texts, rewrites it; the others only merge
        segments, which two machines make alike."""
        return not others or self._owner(BASE_OWNER_KEY, others) == self.id

    def _owner(self, key: str, others: list[str]) -> str:
        return max([self.id, *others], key=lambda i: hashlib.blake2b(f"{i}{key}".encode()).digest())

    def owned_elsewhere(self, hashes: list[str], others: list[str]) -> set[str]:
        """The ``hashes`` whose owner (highest rendezvous score) is another daemon."""
        if not others:
            return set()
        ids = [self.id, *others]
        out: set[str] = set()
        for h in hashes:
            owner = max(ids, key=lambda i: hashlib.blake2b(f"{i}{h}".encode()).digest())
            if owner != self.id:
                out.add(h)
        return out
