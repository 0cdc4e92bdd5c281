"""Soak test: a real daemon under mixed edits, queries and abusive clients for N minutes.

Run::

    .venv/bin/python bench/soak.py --minutes 2 --entries 100000
    .venv/bin/python bench/soak.py --minutes 1 --entries 10000      # a quick run
    .venv/bin/python bench/soak.py --minutes 2 --entries 10000 --only queries,edits,writes

Generates a vault with ``bench/gen_vault.py`` in a temp dir, starts ``wikimem-watch serve``
on a Unix socket there (loopback only, nothing leaves the machine) and, until the time is
up, runs at once:

- **queries**: one client asking mixed questions (with and without time words) in a loop;
  each latency is recorded, every error or refused connection counted;
- **edits**: a writer appending a diary entry (to a day file cut back to its first content
  every 40 appends) or rewriting a wiki item, every 200 ms;
- **writes**: an agent calling ``append_diary`` (spread over the month's days, each day put
  back as it was, by hand, once it holds 10 of them) and ``upsert_wiki`` (twenty items,
  rewritten) through the daemon every 300 ms (``write ok`` / ``write error``);
- **abusers**, each in a bounded loop: silent sockets that never send, garbage bytes,
  huge lines (over ``max_request_bytes``), deeply nested JSON, NaN numbers, trickled
  half-lines, and slow readers that request big results and never read them.

Samples the daemon's RSS from ``/proc/PID/status`` every second. Reports p50/p95/p99
query latency, query errors, what the abusers saw, RSS over time, and whether the daemon
still answers ``status`` at the end. Exit 1 if the daemon died or stopped answering.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from gen_vault import generate  # noqa: E402

from wikimem_watch.daemon.service import SNAPSHOT_IDLE_S  # noqa: E402

QUESTIONS = [
    "coffee with Ann",
    "what happened yesterday",
    "上周 我们聊了什么",
    "sailing trip harbour",
    "last week meeting notes",
    "猫 医生",
    "project deadline in October",
    "the past 3 days",
]


def rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status", encoding="ascii") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def connect(path: Path, timeout_s: float = 30.0) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(timeout_s)
    sock.connect(str(path))
    return sock


def call(sock: socket.socket, reader: object, method: str, params: dict[str, object]) -> dict:
    msg = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    sock.sendall(json.dumps(msg).encode() + b"\n")
    line = reader.readline()  # type: ignore[attr-defined]
    if not line:
        raise ConnectionError("closed")
    return json.loads(line)  # type: ignore[no-any-return]


class Soak:
    def __init__(self, sock: Path, vault: Path, deadline: float) -> None:
        self.sock, self.vault, self.deadline = sock, vault, deadline
        self.latencies_ms: list[float] = []
        self.counts: Counter[str] = Counter()
        self.lock = threading.Lock()

    def live(self) -> bool:
        return time.monotonic() < self.deadline

    def count(self, what: str) -> None:
        with self.lock:
            self.counts[what] += 1

    def queries(self) -> None:
        rng = random.Random(1)
        while self.live():
            try:
                sock = connect(self.sock)
                reader = sock.makefile("rb")
                for _ in range(50):
                    if not self.live():
                        break
                    started = time.perf_counter()
                    reply = call(sock, reader, "query", {"q": rng.choice(QUESTIONS), "k": 10})
                    self.latencies_ms.append((time.perf_counter() - started) * 1000)
                    self.count("query ok" if "result" in reply else "query error")
                sock.close()
            except OSError as exc:
                self.count(f"query connection failed: {type(exc).__name__}")
                time.sleep(0.05)

    def edits(self) -> None:
        """A person editing: entries appended to a day file, which is cut back to what it held
        every ``DAY_ENTRIES`` appends (so the live data stays the same size, and the RSS
        shows what the churn costs), and a wiki item rewritten."""
        n = 0
        day = self.vault / "diary" / "2026-11-28.md"
        original = day.read_bytes() if day.exists() else b""
        while self.live():
            n += 1
            if n % 2:
                if n % (2 * DAY_ENTRIES) == 1:
                    day.write_bytes(original)
                with day.open("a", encoding="utf-8") as fh:
                    fh.write(f"\n## 23:{n % 60:02d}\nsoak edit {n} about kites and 风筝\n")
            else:
                note = self.vault / "wiki" / "soak.md"
                note.write_text(f"# Soak\n\n## item\nrevision {n} of the soak note\n", "utf-8")
            self.count("edits")
            time.sleep(0.2)

    def writes(self) -> None:
        """An agent writing through the daemon: diary entries and a wiki item, every 300 ms.
        A day the agent has written ``AGENT_DAY_ENTRIES`` entries into is put back as it was, by
        hand (an external edit), so a long soak holds as many entries at its end as at its
        start: what its RSS shows is the churn, not more data."""
        n = 0
        appended: Counter[str] = Counter()
        originals: dict[str, bytes | None] = {}
        while self.live():
            try:
                sock = connect(self.sock)
                reader = sock.makefile("rb")
                while self.live():
                    n += 1
                    if n % 2:
                        date = f"2026-11-{1 + (n // 2) % 27:02d}"  # spread over days, as in use
                        self._put_back(date, appended, originals)
                        params = {"text": f"agent note {n} about tides", "date": date}
                        reply = call(sock, reader, "append_diary", params)
                    else:
                        name = f"agent {n % 20}"  # a bounded set of items, rewritten
                        # Its own file: the editor rewrites wiki/soak.md whole, which would
                        # revert these items and keep the sweeper re-applying them.
                        params = {"file": "agent", "name": name, "text": f"revision {n}"}
                        reply = call(sock, reader, "upsert_wiki", params)
                    self.count("write ok" if "result" in reply else "write error")
                    time.sleep(0.3)
                sock.close()
            except OSError as exc:
                self.count(f"write connection failed: {type(exc).__name__}")
                time.sleep(0.05)

    def _put_back(
        self, date: str, appended: Counter[str], originals: dict[str, bytes | None]
    ) -> None:
        """Before the agent's next append to ``date``: when it holds ``AGENT_DAY_ENTRIES`` of the
        agent's entries, give the day file back what it held before the first one."""
        day = self.vault / "diary" / f"{date}.md"
        if date not in originals:
            originals[date] = day.read_bytes() if day.exists() else None
        appended[date] += 1
        if appended[date] <= AGENT_DAY_ENTRIES:
            return
        appended[date] = 1
        held = originals[date]
        if held is None:
            day.unlink(missing_ok=True)
        else:
            day.write_bytes(held)
        self.count("agent days put back")

    def abuse(self, name: str, act: Callable[[], str]) -> None:
        while self.live():
            try:
                self.count(f"{name}: {act()}")
            except OSError as exc:
                self.count(f"{name}: {type(exc).__name__}")
            time.sleep(0.05)

    def _send_and_read(self, data: bytes) -> str:
        sock = connect(self.sock, 15)
        try:
            sock.sendall(data)
            line = sock.makefile("rb").readline()
            if not line:
                return "closed"
            reply = json.loads(line)
            return f"error {reply['error']['code']}" if "error" in reply else "result"
        finally:
            sock.close()

    def silent(self) -> str:
        socks = [connect(self.sock) for _ in range(20)]
        time.sleep(2.0)
        for s in socks:
            s.close()
        return "20 silent sockets held 2 s"

    def garbage(self) -> str:
        return self._send_and_read(os.urandom(200).replace(b"\n", b" ") + b"\n")

    def huge(self) -> str:
        return self._send_and_read(b'{"q": "' + b"x" * 2_000_000 + b'"}\n')

    def nested(self) -> str:
        return self._send_and_read(b"[" * 100_000 + b"\n")

    def nan(self) -> str:
        line = b'{"jsonrpc":"2.0","id":1,"method":"query","params":{"q":"x","half_life_days":NaN}}'
        return self._send_and_read(line + b"\n")

    def trickle(self) -> str:
        sock = connect(self.sock)
        try:
            for byte in b'{"jsonrpc": "2.0", "me':
                sock.sendall(bytes([byte]))
                time.sleep(0.05)
        finally:
            sock.close()
        return "half line trickled"

    def slow_reader(self) -> str:
        sock = connect(self.sock)
        try:
            line = (
                json.dumps(
                    {
                        "jsonrpc": "2.0",
                        "id": 1,
                        "method": "query",
                        "params": {"q": "the", "k": 1000},
                    }
                ).encode()
                + b"\n"
            )
            sock.sendall(line * 20)  # twenty big replies, never read
            time.sleep(1.0)
        finally:
            sock.close()
        return "requested 20 big replies, read none"


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(p / 100 * len(ordered)))] if ordered else float("nan")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--minutes", type=float, default=2.0)
    ap.add_argument("--entries", type=int, default=100_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--only",
        default="",
        help="comma-separated workers to run (default all): queries, edits, writes, silent, "
        "garbage, huge, nested, nan, trickle, slow_reader",
    )
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="wmw-soak-") as tmp:
        vault = Path(tmp) / "vault"
        print(f"generating {args.entries} entries ...", flush=True)
        generate(vault, args.entries, seed=args.seed)
        sock = Path(tmp) / "d.sock"
        env = dict(  # the index snapshot too goes to the temp dir
            os.environ, XDG_CONFIG_HOME=str(Path(tmp) / "xdg"), XDG_CACHE_HOME=str(Path(tmp) / "c")
        )
        proc = subprocess.Popen(
            [sys.executable, "-m", "wikimem_watch", "serve", str(vault), "--socket", str(sock)],
            env=env,
            stderr=subprocess.PIPE,
        )
        try:
            return run(args, proc, sock, vault)
        finally:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5)


DAY_ENTRIES = 40  # soak entries a day file holds before it is cut back
AGENT_DAY_ENTRIES = 10  # the agent's entries a day holds before it is put back (27 days)
WORKERS = (
    "queries",
    "edits",
    "writes",
    "silent",
    "garbage",
    "huge",
    "nested",
    "nan",
    "trickle",
    "slow_reader",
)


def drain(proc: subprocess.Popen[bytes], lines: list[str]) -> None:
    assert proc.stderr is not None
    for raw in proc.stderr:
        lines.append(raw.decode("utf-8", "replace").rstrip())


def wait_ready(proc: subprocess.Popen[bytes], sock: Path) -> float:
    started = time.monotonic()
    while proc.poll() is None and time.monotonic() - started < 600:
        try:
            s = connect(sock, 5)
            reply = call(s, s.makefile("rb"), "status", {})
            s.close()
            if reply["result"]["state"] == "ready":
                return time.monotonic() - started
        except (OSError, KeyError, ValueError):
            pass
        time.sleep(0.1)
    raise SystemExit("the daemon did not become ready")


def run(args: argparse.Namespace, proc: subprocess.Popen[bytes], sock: Path, vault: Path) -> int:
    ready_s = wait_ready(proc, sock)
    s = connect(sock)
    entries = call(s, s.makefile("rb"), "status", {})["result"]["entries"]["total"]
    s.close()
    print(
        f"daemon ready in {ready_s:.1f}s with {entries} entries; soaking {args.minutes:g} min",
        flush=True,
    )
    soak = Soak(sock, vault, time.monotonic() + args.minutes * 60)
    # The daemon's stderr is read all along: a pipe left full would be a bench artefact.
    logged: list[str] = []
    threading.Thread(target=drain, args=(proc, logged), daemon=True).start()
    chosen = set(args.only.split(",")) if args.only else set(WORKERS)
    if unknown := chosen - set(WORKERS):
        raise SystemExit(f"--only: unknown workers {sorted(unknown)}; choose from {WORKERS}")
    workers = [
        threading.Thread(target=getattr(soak, name))
        for name in ("queries", "edits", "writes")
        if name in chosen
    ]
    for name in WORKERS[3:]:
        if name in chosen:
            act = getattr(soak, name)
            workers.append(threading.Thread(target=soak.abuse, args=(name, act)))
    for w in workers:
        w.start()
    rss: list[tuple[float, int]] = []
    t0 = time.monotonic()
    while soak.live() and proc.poll() is None:
        rss.append((time.monotonic() - t0, rss_kib(proc.pid)))
        time.sleep(1.0)
    for w in workers:
        w.join(60)
    alive = proc.poll() is None
    status: dict = {}
    if alive:
        s = connect(sock)
        status = call(s, s.makefile("rb"), "status", {}).get("result", {})
        s.close()
    lat = soak.latencies_ms
    print(
        f"\nqueries: {len(lat)}  p50 {percentile(lat, 50):.1f} ms  p95 {percentile(lat, 95):.1f} ms"
        f"  p99 {percentile(lat, 99):.1f} ms  max {max(lat, default=float('nan')):.1f} ms"
        f"  mean {statistics.fmean(lat) if lat else float('nan'):.1f} ms"
    )
    for what, n in sorted(soak.counts.items()):
        print(f"  {n:7d}  {what}")
    step = max(1, len(rss) // 12)
    print("RSS (MiB) over time: " + ", ".join(f"{t:.0f}s {k / 1024:.0f}" for t, k in rss[::step]))
    if rss:
        print(
            f"RSS first {rss[0][1] / 1024:.0f} MiB, peak {max(k for _, k in rss) / 1024:.0f} MiB, "
            f"last {rss[-1][1] / 1024:.0f} MiB"
        )
    warned = [line for line in logged if "WARNING" in line or "ERROR" in line]
    print(f"daemon stderr: {len(logged)} lines, {len(warned)} warnings or errors")
    for line in warned[-5:]:
        print(f"  {line}")
    if status:
        print(
            f"daemon still answering: state {status['state']}, entries "
            f"{status['entries']['total']}, socket limits {status['socket_limits']}"
        )
        # Idle, the daemon writes its snapshot and hands free heap back: what RSS is then
        # tells the churn's retained free heap from what the index holds.
        time.sleep(SNAPSHOT_IDLE_S + 3)
        if proc.poll() is None:
            print(
                f"RSS {SNAPSHOT_IDLE_S + 3:.0f} s after the load stopped: "
                f"{rss_kib(proc.pid) / 1024:.0f} MiB"
            )
    else:
        print("DAEMON DIED OR STOPPED ANSWERING")
    return 0 if alive and status else 1


if __name__ == "__main__":
    raise SystemExit(main())
