"""Two machines syncing one vault folder, cache included, simulated on one machine.

``TwoWaySync`` keeps two directory trees in step the way a file sync tool does: a file
created or changed on one side is copied to the other (temp file + rename, mtime kept), a
file deleted on one side is deleted on the other, a file changed on both keeps the newer.
Sockets, FIFOs and temp files are skipped (per-machine, or not yet complete).
``CountingServer`` is an OpenAI-compatible embedding stub on 127.0.0.1 that counts inputs.
``run_machines`` puts both together with real daemons (used by ``bench/cache_churn.py``
and ``tests/integration/test_two_machines.py``). Loopback only.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "integration"))

from daemon_harness import DaemonProc, eventually, short_socket_path  # noqa: E402

from wikimem_watch.vectors.hash_embedder import HashEmbedder  # noqa: E402

State = dict[str, tuple[int, int]]  # relative path → (mtime_ns, size)


class TwoWaySync:
    """A two-way file sync between directories ``a`` and ``b``; ``step`` is one pass."""

    def __init__(self, a: Path, b: Path) -> None:
        self.a, self.b = a, b
        self.prev: tuple[State, State] = ({}, {})
        self.copied = 0
        self.deleted = 0
        self.copied_names: list[str] = []

    @staticmethod
    def scan(root: Path) -> State:
        out: State = {}
        for dirpath, _, names in os.walk(root):
            for name in names:
                path = Path(dirpath) / name
                if name.endswith(".tmp"):
                    continue
                try:
                    st = path.lstat()
                except OSError:
                    continue
                if stat.S_ISREG(st.st_mode):
                    out[path.relative_to(root).as_posix()] = (st.st_mtime_ns, st.st_size)
        return out

    def step(self) -> None:
        sa, sb = self.scan(self.a), self.scan(self.b)
        pa, pb = self.prev
        na, nb = dict(sa), dict(sb)
        # Notes before cache files: the order least kind to us (a note arrives, its vectors later).
        names = set(sa) | set(sb) | set(pa) | set(pb)
        for rel in sorted(names, key=lambda r: (r.startswith(".wikimem/"), r)):
            ca, cb = sa.get(rel) != pa.get(rel), sb.get(rel) != pb.get(rel)
            if not (ca or cb):
                continue
            if rel in sa and rel in sb:
                if ca and (not cb or sa[rel][0] >= sb[rel][0]):
                    nb[rel] = self._copy(self.a, self.b, rel, nb)
                else:
                    na[rel] = self._copy(self.b, self.a, rel, na)
            elif rel in sa:  # absent on b: deleted there, or new on a
                if rel in pb and not ca:
                    self._delete(self.a, rel, na)
                else:
                    nb[rel] = self._copy(self.a, self.b, rel, nb)
            elif rel in sb:
                if rel in pa and not cb:
                    self._delete(self.b, rel, nb)
                else:
                    na[rel] = self._copy(self.b, self.a, rel, na)
        self.prev = (
            {k: v for k, v in na.items() if v[0] >= 0},
            {k: v for k, v in nb.items() if v[0] >= 0},
        )

    def _copy(self, src: Path, dst: Path, rel: str, state: State) -> tuple[int, int]:
        target = dst / rel
        try:
            data = (src / rel).read_bytes()
            st = (src / rel).stat()
        except OSError:
            return (-1, -1)  # gone meanwhile: the next pass sees it
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.utime(tmp, ns=(st.st_atime_ns, st.st_mtime_ns))
        os.replace(tmp, target)
        self.copied += 1
        self.copied_names.append(rel)
        return (st.st_mtime_ns, len(data))

    def _delete(self, root: Path, rel: str, state: State) -> None:
        with contextlib.suppress(OSError):
            (root / rel).unlink()
            self.deleted += 1
        state.pop(rel, None)


class SyncLoop:
    """``TwoWaySync.step`` every ``period_s`` on a thread until stopped."""

    def __init__(self, sync: TwoWaySync, period_s: float = 0.1) -> None:
        self.sync, self.period_s = sync, period_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(self.period_s):
            self.sync.step()

    def __enter__(self) -> SyncLoop:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(5)


class CountingServer:
    """``POST /v1/embeddings`` answered with ``HashEmbedder(16)`` vectors; counts inputs."""

    def __init__(self) -> None:
        self.inputs = 0
        self.lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                payload = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with server.lock:
                    server.inputs += len(payload["input"])
                vectors = HashEmbedder(dim=16).embed_documents(payload["input"])
                data = [{"embedding": v.tolist(), "index": i} for i, v in enumerate(vectors)]
                body = json.dumps({"data": data, "model": payload["model"]}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                return

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self._thread = threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True)

    def __enter__(self) -> CountingServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self._thread.join(5)


def make_vault(root: Path, days: int = 3) -> None:
    (root / "diary").mkdir(parents=True)
    (root / "wiki").mkdir()
    for d in range(days):
        (root / "diary" / f"2026-07-{10 + d:02d}.md").write_text(
            f"## 08:00\nMorning notes of day {d}: coffee, rain and a walk.\n", encoding="utf-8"
        )
    (root / "wiki" / "people.md").write_text("## Ann\nAnn likes sailing.\n", encoding="utf-8")


def settled(daemon: DaemonProc) -> bool:
    status = daemon.result("status")
    vectors = status["vectors"]
    return bool(
        status["pending"] == 0
        and vectors["state"] == "ready"
        and vectors["pending"] == 0
        and not vectors["busy"]
    )


def append_entry(vault: Path, day: str, i: int) -> None:
    path = vault / "diary" / f"{day}.md"
    with path.open("a", encoding="utf-8") as fh:
        fh.write(f"\n## {9 + i // 60:02d}:{i % 60:02d}\nEdit number {i}: kites and tea {i}.\n")


def run_machines(
    machines: int,
    edits: int,
    *,
    grace_s: float = 3.0,
    pause_s: float = 0.25,
    work: Path | None = None,
) -> dict[str, Any]:
    """Edits at ~1/pause_s per second, alternating between ``machines`` (1 or 2) vault copies;
    returns embedded texts per edit, after the edits stop, and on a restart of every daemon."""
    with tempfile.TemporaryDirectory() as tmp, CountingServer() as server:
        base = work or Path(tmp)
        vaults = [base / f"machine{m}" for m in range(machines)]
        make_vault(vaults[0])
        extra = ("--embed", "http", "--embed-url", server.url, "--embed-model", "stub-16")
        os.environ["WIKIMEM_WATCH_EMBED_PEER_GRACE_S"] = str(grace_s)
        daemons: list[DaemonProc] = []
        sync = TwoWaySync(vaults[0], vaults[-1]) if machines == 2 else None
        try:
            daemons.append(_start(vaults[0], extra))
            if sync is not None:
                sync.step()  # the second machine receives the vault and its cache
                daemons.append(_start(vaults[1], extra))
            initial = server.inputs
            days = ["2026-07-10", "2026-07-11"]
            with SyncLoop(sync) if sync is not None else _Nothing():
                for i in range(edits):
                    append_entry(vaults[i % machines], days[i % machines], i)
                    time.sleep(pause_s)
                for daemon in daemons:
                    eventually(lambda d=daemon: settled(d), "settled", deadline_s=60)
                if sync is not None:
                    eventually(lambda: _same(daemons), "both vaults equal", deadline_s=60)
                    for daemon in daemons:
                        eventually(lambda d=daemon: settled(d), "settled", deadline_s=60)
                after_edits = server.inputs
                time.sleep(grace_s + 1.0)  # edits stopped: nothing more may be embedded
                quiet = server.inputs
            for daemon in daemons:
                daemon.stop()
            daemons = [_start(v, extra) for v in vaults]
            restart = server.inputs
            return {
                "machines": machines,
                "edits": edits,
                "embedded_per_edit": (after_edits - initial) / edits,
                "embedded_after_edits_stopped": quiet - after_edits,
                "embedded_on_restart": restart - quiet,
                "files_copied": sync.copied if sync else 0,
                "bases_copied": _bases(sync),
            }
        finally:
            for daemon in daemons:
                daemon.stop()
            os.environ.pop("WIKIMEM_WATCH_EMBED_PEER_GRACE_S", None)


class _Nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


def _start(vault: Path, extra: tuple[str, ...]) -> DaemonProc:
    daemon = DaemonProc(vault, short_socket_path(), *extra)
    daemon.wait_ready()
    eventually(lambda: settled(daemon), "vectors ready", deadline_s=60)
    return daemon


def _same(daemons: list[DaemonProc]) -> bool:
    return len({d.result("status")["digest"] for d in daemons}) == 1


def _bases(sync: TwoWaySync | None) -> int:
    return 0 if sync is None else sum(n.endswith("vectors.keys.jsonl") for n in sync.copied_names)


if __name__ == "__main__":
    print(run_machines(int(sys.argv[1]) if len(sys.argv) > 1 else 2, 20))
