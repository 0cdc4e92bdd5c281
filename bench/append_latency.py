"""append_diary latency, call → searchable, through a running daemon on a vault of N entries.

    python bench/append_latency.py --entries 10000 100000 --calls 200

The reply of ``append_diary`` comes after the daemon applied the written file to its index
(ADR-0016), so the time of one call *is* call → searchable; each call is also checked with a
``query`` for its unique word (not timed). Writes go to the newest day of the vault, at the
end (O_APPEND) and, every fourth call, at 00:00 (a compare-and-swap replace).
"""

from __future__ import annotations

import argparse
import json
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def call(reader: object, sock: socket.socket, method: str, params: dict[str, object]) -> object:
    sock.sendall(
        json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).encode() + b"\n"
    )
    reply = json.loads(reader.readline())  # type: ignore[attr-defined]
    if "result" not in reply:
        raise SystemExit(f"{method}: {reply}")
    return reply["result"]


def run(entries: int, calls: int) -> dict[str, object]:
    with tempfile.TemporaryDirectory() as tmp:
        vault = Path(tmp) / "vault"
        subprocess.run(
            [sys.executable, str(HERE / "gen_vault.py"), str(vault), "--entries", str(entries)],
            check=True,
            capture_output=True,
        )
        day = sorted((vault / "diary").glob("*.md"))[-1].stem
        path = Path(tempfile.gettempdir()) / f"wmw-lat-{time.monotonic_ns() % 10**8}.sock"
        daemon = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "wikimem_watch",
                "serve",
                str(vault),
                "--socket",
                str(path),
                "--quiet",
            ]
        )
        try:
            while True:
                try:
                    with socket.socket(socket.AF_UNIX) as probe:
                        probe.connect(str(path))
                        if call(probe.makefile("rb"), probe, "status", {})["state"] == "ready":  # type: ignore[index]
                            break
                except OSError:
                    time.sleep(0.1)
            sock = socket.socket(socket.AF_UNIX)
            sock.connect(str(path))
            reader = sock.makefile("rb")
            took = []
            for i in range(calls):
                params: dict[str, object] = {"text": f"latencyprobe{i}x note", "date": day}
                if i % 4 == 3:
                    params["time"] = "00:00"
                started = time.perf_counter()
                reply = call(reader, sock, "append_diary", params)
                took.append((time.perf_counter() - started) * 1000)
                hits = call(reader, sock, "query", {"q": f"latencyprobe{i}x", "k": 1})["hits"]  # type: ignore[index]
                assert hits and hits[0]["id"] == reply["id"], (reply, hits)  # type: ignore[index]
            took.sort()
            return {
                "entries": entries,
                "calls": calls,
                "p50_ms": round(statistics.median(took), 2),
                "p95_ms": round(took[int(0.95 * (len(took) - 1))], 2),
                "max_ms": round(took[-1], 2),
            }
        finally:
            daemon.terminate()
            daemon.wait(10)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--entries", type=int, nargs="+", default=[10_000, 100_000])
    ap.add_argument("--calls", type=int, default=200)
    args = ap.parse_args()
    for n in args.entries:
        print(json.dumps(run(n, args.calls)), flush=True)


if __name__ == "__main__":
    main()
