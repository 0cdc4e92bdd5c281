"""Live-daemon benchmark: time to ready, edit-to-searchable latency, a 1,000-file burst, and
the idle daemon's CPU — all measured through a real ``wikimem-watch serve`` subprocess.

Run (from the repository root)::

    PYTHONPATH=. /work/venv/bin/python bench/live.py --sizes 10000,100000 --edits 30
    PYTHONPATH=. /work/venv/bin/python bench/live.py --sizes 10000 --debounce-sweep 0,10,25,50,100

Edit latency: append a ``## HH:MM`` entry holding a unique word to a diary file, then poll
``query`` over the socket until a hit contains that word; the clock starts when the write is
closed. Burst: write 1,000 new notes into a new folder, poll until every one is searchable.
Idle CPU: utime+stime from ``/proc/<pid>/stat`` over ``--idle-s`` seconds after the burst.
Batches: the number of ``applied`` lines the daemon logs at DEBUG (one per applied change set).
Snapshot (ADR-0015): after the run the daemon stops (saving its index snapshot) and starts
again: ``ready_warm_s`` and the files it re-read. ``oneshot_cold_s`` / ``oneshot_warm_s``
time a whole ``query --in-process`` process without and with the snapshot. ``--warm-runs N``
repeats each start from the snapshot N times and reports the medians. Readiness is polled
every 5 ms. Snapshots go
to a temporary ``XDG_CACHE_HOME``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))


def make_vault(out: Path, entries: int) -> None:
    """bench/gen_vault.py when present, else a minimal diary+wiki generator."""
    try:
        from gen_vault import generate

        generate(out, entries, seed=0)
        return
    except ImportError:
        pass
    rng = random.Random(0)
    words = [f"w{i}" for i in range(5000)] + ["coffee", "train", "meeting", "咖啡", "会议"]
    (out / "diary").mkdir(parents=True)
    (out / "wiki").mkdir()
    days = entries // 8
    for d in range(days):
        day = time.strftime("%Y-%m-%d", time.gmtime(1_700_000_000 + d * 86400))
        body = "".join(
            f"## {8 + i:02}:00\n{' '.join(rng.choices(words, k=30))}\n\n" for i in range(8)
        )
        (out / "diary" / f"{day}.md").write_text(body, "utf-8")


class Rpc:
    def __init__(self, path: Path) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(str(path))
        self.reader = self.sock.makefile("rb")

    def call(self, method: str, params: dict[str, object] | None = None) -> Any:
        msg = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params or {}}
        self.sock.sendall(json.dumps(msg).encode() + b"\n")
        reply = json.loads(self.reader.readline())
        if "error" in reply:
            raise RuntimeError(reply["error"])
        return reply["result"]

    def close(self) -> None:
        self.reader.close()
        self.sock.close()


def unique_word(rng: random.Random) -> str:
    return "zq" + "".join(rng.choice("bcdfghjklmnpstvwx") for _ in range(10))


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def cpu_ticks(pid: int) -> int:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15)


def oneshot_s(vault: Path, env: dict[str, str]) -> float:
    """Wall time of a whole in-process ``query`` process (start, index, answer, exit)."""
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "wikimem_watch", "query", "--vault", str(vault), "--in-process",
         "--json", "coffee meeting"],
        env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    return time.perf_counter() - started


# How often a start is polled for ``ready``: 5 ms, so a ~0.2 s start is not rounded up to
# the next 50 ms (the interval until 2026-11-30).
READY_POLL_S = 0.005


class Daemon:
    def __init__(self, vault: Path, debounce_ms: int | None, log: Path) -> None:
        self.sock = Path(tempfile.gettempdir()) / f"wmw-bench-{os.getpid()}.sock"
        args = ["serve", str(vault), "--socket", str(self.sock), "--log-level", "DEBUG"]
        if debounce_ms is not None:
            args += ["--debounce-ms", str(debounce_ms)]
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        self.log = log.open("ab")
        started = time.perf_counter()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "wikimem_watch", *args], stderr=self.log, env=env
        )
        self.ready_s = self._wait_ready(started)
        self.rpc = Rpc(self.sock)

    def _wait_ready(self, started: float) -> float:
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"daemon exited {self.proc.returncode}")
            try:
                rpc = Rpc(self.sock)
            except OSError:
                time.sleep(READY_POLL_S)
                continue
            state = rpc.call("status")["state"]
            rpc.close()
            if state == "ready":
                return time.perf_counter() - started
            time.sleep(READY_POLL_S)

    def stop(self) -> None:
        self.rpc.close()
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(30)
        self.log.close()


def wait_found(rpc: Rpc, word: str, k: int = 5, want: int = 1, deadline_s: float = 60) -> None:
    deadline = time.perf_counter() + deadline_s
    while time.perf_counter() < deadline:
        hits = rpc.call("query", {"q": word, "k": k, "parse_time": False})["hits"]
        if sum(word in h["text"] for h in hits) >= want:
            return
        time.sleep(0.001)
    raise RuntimeError(f"{word!r} never became searchable")


def edit_latencies(vault: Path, rpc: Rpc, edits: int, rng: random.Random) -> list[float]:
    diary = sorted((vault / "diary").glob("*.md"))[-1]
    out = []
    for i in range(edits):
        word = unique_word(rng)
        with diary.open("a", encoding="utf-8") as fh:
            fh.write(f"\n## 23:{i % 60:02}\nlive edit {word} appended\n")
        written = time.perf_counter()
        wait_found(rpc, word)
        out.append((time.perf_counter() - written) * 1000)
        time.sleep(0.05)  # let the previous edit's trailing events settle
    return out


def burst(vault: Path, rpc: Rpc, files: int) -> tuple[float, float]:
    folder = vault / "burst"
    folder.mkdir()
    started = time.perf_counter()
    for i in range(files):
        (folder / f"b{i:05}.md").write_text(f"# B{i}\n\n## item\nburstmark number {i}\n", "utf-8")
    written = time.perf_counter()
    expected = files
    deadline = time.perf_counter() + 300
    while time.perf_counter() < deadline:
        hits = rpc.call("query", {"q": "burstmark", "k": files, "paths": ["burst/"]})["hits"]
        if len(hits) >= expected:
            return (time.perf_counter() - written) * 1000, (written - started) * 1000
        time.sleep(0.01)
    raise RuntimeError("burst never became searchable")


def count_batches(log: Path) -> int:
    return log.read_text(errors="replace").count(" applied ")


def run(
    size: int,
    edits: int,
    idle_s: float,
    debounce_ms: int | None,
    burst_files: int,
    warm_runs: int = 1,
) -> dict[str, object]:
    base = Path(tempfile.mkdtemp(prefix=f"wmw-live-{size}-"))
    vault = base / "vault"
    os.environ["XDG_CACHE_HOME"] = str(base / "cache")  # the snapshot, for this run only
    try:
        make_vault(vault, size)
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        cold_oneshot = oneshot_s(vault, {**env, "WIKIMEM_WATCH_SNAPSHOT": "false"})
        log = base / "daemon.log"
        daemon = Daemon(vault, debounce_ms, log)
        rng = random.Random(size)
        try:
            lat = edit_latencies(vault, daemon.rpc, edits, rng)
            batches_before = count_batches(log)
            burst_ms, write_ms = (
                burst(vault, daemon.rpc, burst_files) if burst_files else (0.0, 0.0)
            )
            burst_batches = count_batches(log) - batches_before
            idle_cpu = None
            if idle_s > 0:
                time.sleep(2)  # let the burst's last work finish
                before = cpu_ticks(daemon.proc.pid)
                time.sleep(idle_s)
                ticks = cpu_ticks(daemon.proc.pid) - before
                idle_cpu = round(ticks / os.sysconf("SC_CLK_TCK") / idle_s * 100, 3)
            status = daemon.rpc.call("status")
        finally:
            daemon.stop()
        warm_ready, warm_oneshot = [], []
        for _ in range(warm_runs):  # from the snapshot the first daemon saved
            warm = Daemon(vault, debounce_ms, log)
            warm_status = warm.rpc.call("status")
            warm.stop()
            warm_ready.append(warm.ready_s)
            warm_oneshot.append(oneshot_s(vault, env))
        return {
            "entries": size,
            "files": status["files"],
            "debounce_ms": debounce_ms,
            "watcher": status["watcher"],
            "ready_s": round(daemon.ready_s, 2),
            "ready_warm_s": round(statistics.median(warm_ready), 3),
            "warm_reread_files": warm_status["snapshot"]["reread"],
            "warm_over_cold": round(statistics.median(warm_ready) / daemon.ready_s, 3),
            "oneshot_cold_s": round(cold_oneshot, 2),
            "oneshot_warm_s": round(statistics.median(warm_oneshot), 3),
            "warm_runs": warm_runs,
            "edit_ms_p50": round(statistics.median(lat), 1),
            "edit_ms_p95": round(pct(lat, 95), 1),
            "edit_ms_max": round(max(lat), 1),
            "burst_files": burst_files,
            "burst_write_ms": round(write_ms, 1),
            "burst_searchable_ms": round(burst_ms, 1),
            "burst_batches": burst_batches,
            "idle_cpu_percent": idle_cpu,
        }
    finally:
        shutil.rmtree(base, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10000,100000", help="entries per vault")
    parser.add_argument("--edits", type=int, default=30, help="edits per size (>= 30)")
    parser.add_argument("--burst", type=int, default=1000, help="files in the burst (0: skip)")
    parser.add_argument("--idle-s", type=float, default=60.0, help="idle CPU window (0: skip)")
    parser.add_argument("--debounce-ms", type=int, help="daemon debounce (default: config)")
    parser.add_argument("--debounce-sweep", help="comma-separated debounce values at 1st size")
    parser.add_argument(
        "--warm-runs", type=int, default=1, help="starts from the snapshot (medians reported)"
    )
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    if args.debounce_sweep:
        for value in (int(v) for v in args.debounce_sweep.split(",")):
            print(json.dumps(run(sizes[0], args.edits, 0, value, args.burst)), flush=True)
        return 0
    for size in sizes:
        print(
            json.dumps(
                run(size, args.edits, args.idle_s, args.debounce_ms, args.burst, args.warm_runs)
            ),
            flush=True,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
