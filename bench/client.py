"""The thin client: `wikimem-watch query --json` against a running daemon, beside a 20-line
standard-library socket client doing the same request, each as a fresh process.

    python bench/client.py                     # vault_example, 30 runs of each
    python bench/client.py --vault DIR --runs 50

Starts a daemon on the vault (or uses the running one), then alternates the two commands so
a busy moment hits both alike, and prints the median and p90 wall time of each and their
ratio, and the same for `wikimem-watch --help` and `wikimem-watch query --help` (timed in the
same rounds; they need no daemon). Also lists any heavy module (numpy, watchdog, markdown_it,
the engine, dataclasses, the Config module) the CLI imported, from `python -X importtime`
(there should be none).

The package is byte-compiled first, as an installed one is: with PYTHONDONTWRITEBYTECODE set
and no `__pycache__`, every run would compile each module it imports from source, and the
figure would measure the compiler (`--no-compile` leaves the bytecode as it is).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HEAVY = (
    "numpy",
    "watchdog",
    "markdown_it",
    "wikimem_watch.core.engine",
    "dataclasses",
    "wikimem_watch.config",
)

STDLIB_CLIENT = r"""
import json, socket, sys
path, q = sys.argv[1], sys.argv[2]
with socket.socket(socket.AF_UNIX) as s:
    s.connect(path)
    req = {"jsonrpc": "2.0", "id": 1, "method": "query", "params": {"q": q}}
    s.sendall(json.dumps(req).encode() + b"\n")
    print(s.makefile().readline(), end="")
"""


def timed(cmd: list[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    subprocess.run(cmd, check=True, capture_output=True, env=env)
    return time.perf_counter() - started


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--vault", type=Path, default=ROOT / "vault_example")
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--q", default="火锅")
    ap.add_argument("--no-compile", action="store_true", help="do not byte-compile first")
    args = ap.parse_args()
    if not args.no_compile:
        compileall = [sys.executable, "-m", "compileall", "-q", str(ROOT / "wikimem_watch")]
        subprocess.run(compileall, check=True)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    cli = [sys.executable, "-m", "wikimem_watch"]
    daemon = None

    def daemon_status() -> dict[str, object]:
        done = subprocess.run(  # no daemon: answered in-process, with no socket
            [*cli, "status", "--vault", str(args.vault), "--json"], capture_output=True, env=env
        )
        return json.loads(done.stdout) if done.returncode == 0 else {}

    status = daemon_status()
    if "socket" not in status:
        daemon = subprocess.Popen([*cli, "serve", str(args.vault), "--quiet"], env=env)
        for _ in range(200):
            time.sleep(0.05)
            status = daemon_status()
            if status.get("state") == "ready" and "socket" in status:
                break
    sock = str(status["socket"])
    ours = [*cli, "query", "--vault", str(args.vault), "--json", args.q]
    plain = [sys.executable, "-c", STDLIB_CLIENT, sock, args.q]
    helps = [[*cli, "--help"], [*cli, "query", "--help"]]
    try:
        a, b, h, qh = [], [], [], []
        for _ in range(args.runs):
            a.append(timed(ours, env))
            b.append(timed(plain, env))
            h.append(timed(helps[0], env))
            qh.append(timed(helps[1], env))
        trace = subprocess.run(
            [sys.executable, "-X", "importtime", *ours[1:]], capture_output=True, env=env, text=True
        ).stderr
    finally:
        if daemon is not None:
            subprocess.run([*cli, "stop", "--vault", str(args.vault)], env=env, check=False)
            daemon.wait(10)
    heavy = sorted({m for m in HEAVY for line in trace.splitlines() if line.endswith(f" {m}")})

    def row(name: str, xs: list[float]) -> str:
        p90 = statistics.quantiles(xs, n=10)[-1]
        return (
            f"{name:28s} median {statistics.median(xs) * 1000:7.1f} ms   p90 {p90 * 1000:7.1f} ms"
        )

    print(row("wikimem-watch query --json", a))
    print(row("stdlib socket client", b))
    print(f"ratio (median)               {statistics.median(a) / statistics.median(b):.2f}x")
    print(row("wikimem-watch --help", h))
    print(row("wikimem-watch query --help", qh))
    print(f"heavy modules imported       {', '.join(heavy) or 'none'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
