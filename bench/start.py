"""How long a start from the index snapshot takes, as a user meets it: a fresh process each.

    python bench/start.py --sizes 10000,100000 --runs 7

Per size, after one cold run that writes the snapshot (and a byte-compile of the package, as
an installed package is compiled: a stale ``.pyc`` costs its module's compile at every start):

- ``daemon``: ``wikimem-watch serve VAULT`` spawned, until it prints its "ready" line
  (the index is loaded and the socket answers); then it is stopped.
- ``daemon polled``: the same, until a ``status`` call on its socket says ``ready`` (a client
  polling every 5 ms, as ``bench/live.py`` does; the calls share the daemon's CPU).
- ``one-shot``: ``wikimem-watch query --vault VAULT --in-process --json "coffee meeting"``,
  start to exit.

With ``--cold`` every start is a first start: a new, empty cache directory and snapshot
directory each time, so the daemon and the one-shot scan the whole vault (ADR-0019).

Medians of ``--runs``; the interpreter alone and ``import numpy`` are timed beside them, the
floor under all three. Vaults come from ``bench/gen_vault.py`` via ``bench/index.py``'s
cache. Nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import compileall
import contextlib
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}


COLD = False  # --cold: every start with empty caches


@contextlib.contextmanager
def caches() -> Iterator[tuple[list[str], dict[str, str]]]:
    """Flags and environment of one start: with ``COLD``, a new cache and snapshot dir."""
    if not COLD:
        yield [], ENV
        return
    with tempfile.TemporaryDirectory(prefix="wmw-cold-") as tmp:
        yield ["--cache-dir", f"{tmp}/cache"], {**ENV, "XDG_CACHE_HOME": f"{tmp}/xdg"}


def daemon_s(vault: Path, *, polled: bool) -> float:
    with caches() as (flags, env):
        return _daemon_s(vault, polled, flags, env)


def _daemon_s(vault: Path, polled: bool, flags: list[str], env: dict[str, str]) -> float:
    sock = Path(tempfile.gettempdir()) / f"wmw-start-{os.getpid()}.sock"
    cmd = [sys.executable, "-m", "wikimem_watch", "serve", str(vault), "--socket", str(sock)]
    began = time.perf_counter()
    proc = subprocess.Popen(
        [*cmd, *flags], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env
    )
    try:
        if not polled:
            assert proc.stdout is not None
            if "ready" not in proc.stdout.readline():
                raise RuntimeError("the daemon did not say it was ready")
            return time.perf_counter() - began
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"daemon exited {proc.returncode}")
            try:
                with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
                    conn.connect(str(sock))
                    conn.sendall(b'{"jsonrpc": "2.0", "id": 1, "method": "status"}\n')
                    reply = json.loads(conn.makefile("rb").readline())
                if reply["result"]["state"] == "ready":
                    return time.perf_counter() - began
            except OSError:
                pass
            time.sleep(0.005)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(60)


def wall_s(cmd: list[str], cold: bool = False) -> float:
    with caches() if cold else contextlib.nullcontext(([], ENV)) as (flags, env):
        began = time.perf_counter()
        subprocess.run(
            [*cmd, *flags],
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=env,
        )
        return time.perf_counter() - began


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--sizes", default="10000")
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()) / "wikimem-bench")
    ap.add_argument("--cold", action="store_true", help="every start with empty caches")
    args = ap.parse_args()
    global COLD
    COLD = args.cold
    sys.path.insert(0, str(ROOT))
    from bench.index import vault_for

    compileall.compile_dir(ROOT / "wikimem_watch", quiet=1)
    python = [sys.executable, "-c"]
    floor = {
        "python": statistics.median(wall_s([*python, "pass"]) for _ in range(args.runs)),
        "import numpy": statistics.median(
            wall_s([*python, "import numpy"]) for _ in range(args.runs)
        ),
    }
    print(" · ".join(f"{name} {s:.3f} s" for name, s in floor.items()))
    print("| entries | daemon (ready line) | daemon (polled status) | one-shot |")
    print("|---:|---:|---:|---:|")
    for size in (int(s) for s in args.sizes.split(",")):
        vault = vault_for(size, 0, args.workdir)
        oneshot = [sys.executable, "-m", "wikimem_watch", "query", "--vault", str(vault)]
        oneshot += ["--in-process", "--json", "coffee meeting"]
        if not COLD:
            wall_s(oneshot)  # the snapshot, when there is none yet
        runs: dict[str, list[float]] = {"line": [], "polled": [], "oneshot": []}
        for _ in range(args.runs):  # alternated, so all three meet the same load
            runs["line"].append(daemon_s(vault, polled=False))
            runs["polled"].append(daemon_s(vault, polled=True))
            runs["oneshot"].append(wall_s(oneshot, cold=True))
        med = {k: statistics.median(v) for k, v in runs.items()}
        print(
            f"| {size:,} | {med['line']:.3f} s | {med['polled']:.3f} s | {med['oneshot']:.3f} s |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
