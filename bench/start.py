"""How long a start takes, as a user meets it: a fresh process each.

    python bench/start.py --sizes 10000,100000 --runs 7            # from the index snapshot
    python bench/start.py --cold --sizes 10000,100000 --runs 3     # first starts
    python bench/start.py --cold --tree ../old-checkout ...        # another checkout's code
    python bench/start.py --cold --vault /tmp/store/bench/vault-1000000-s0 --runs 1 --kinds line

Per vault, after one run that writes the snapshot (in a snapshot directory of this run's own,
so no snapshot another tree wrote is timed; and a byte-compile of the package, as an
installed package is compiled: a stale ``.pyc`` costs its module's compile at every start):

- ``line``: ``wikimem-watch serve VAULT`` spawned, until it prints its "ready" line (the
  index is loaded and the socket answers); then it is stopped. Its peak RSS at that moment
  (``VmHWM``) is reported beside it and, on a first start (``--cold``), its peak RSS once
  it has written its first index snapshot (a few seconds after ready, when its writer has
  been idle; ``status`` says when).
- ``polled``: the same, until a ``status`` call on its socket says ``ready`` (a client
  polling every 5 ms, as ``bench/live.py`` does; the calls share the daemon's CPU).
- ``oneshot``: ``wikimem-watch query --vault VAULT --in-process --json "coffee meeting"``,
  start to exit, and its peak RSS (a forked scan helper's is its own, not counted).

With ``--cold`` every start is a first start: a new, empty cache directory and snapshot
directory each time, so the daemon and the one-shot scan the whole vault (ADR-0019).
``--one-cpu`` runs every process under ``taskset -c 0`` (so no scan helper can help), and
``--tree`` runs the package of another checkout, for a before/after on the same vaults.

Medians of ``--runs``, the kinds alternated run by run; the interpreter alone and ``import
numpy`` are timed beside them, the floor under all three. Vaults come from
``bench/gen_vault.py`` via ``bench/index.py``'s cache, or ``--vault``. Nothing here asserts a
time.
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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
KINDS = ("line", "polled", "oneshot")
# ``python -m`` imports from its working directory first: run from elsewhere, so ``--tree``
# decides which package runs.
NEUTRAL = tempfile.gettempdir()


@dataclass(frozen=True)
class Starts:
    """How every process is started: which package, with which caches, on which CPUs."""

    tree: Path
    cold: bool
    one_cpu: bool
    # Warm starts: this run's own snapshot directory, so a snapshot another tree wrote (in
    # an older or newer format) is never what a start is timed from.
    warm_home: str = ""

    def command(self, *args: str) -> list[str]:
        pinned = ["taskset", "-c", "0"] if self.one_cpu else []
        return [*pinned, sys.executable, "-m", "wikimem_watch", *args]

    @contextlib.contextmanager
    def caches(self) -> Iterator[tuple[list[str], dict[str, str]]]:
        """Flags and environment of one start: when cold, a new cache and snapshot dir."""
        env = {**os.environ, "PYTHONPATH": str(self.tree)}
        if not self.cold:
            yield [], {**env, "XDG_CACHE_HOME": self.warm_home} if self.warm_home else env
            return
        with tempfile.TemporaryDirectory(prefix="wmw-cold-") as tmp:
            yield ["--cache-dir", f"{tmp}/cache"], {**env, "XDG_CACHE_HOME": f"{tmp}/xdg"}


def daemon(starts: Starts, vault: Path, *, polled: bool) -> tuple[float, float, float]:
    """Seconds from spawn to ready, the daemon's peak RSS (MB) then and, on a first start
    (``--cold``), its peak RSS once it has written its first index snapshot (NaN else)."""
    sock = Path(tempfile.gettempdir()) / f"wmw-start-{os.getpid()}.sock"
    with starts.caches() as (flags, env):
        cmd = starts.command("serve", str(vault), "--socket", str(sock), *flags)
        began = time.perf_counter()
        proc = subprocess.Popen(
            cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env, cwd=NEUTRAL
        )
        try:
            _wait_ready(proc, sock, polled)
            took = time.perf_counter() - began
            ready_peak = _peak_mb(proc.pid)
            saved_peak = float("nan")
            if starts.cold and not polled:  # written once the writer has been idle a while
                _wait_saved(proc, sock)
                saved_peak = _peak_mb(proc.pid)
            return took, ready_peak, saved_peak
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(300)


def _wait_ready(proc: subprocess.Popen[str], sock: Path, polled: bool) -> None:
    if not polled:
        assert proc.stdout is not None
        if "ready" not in proc.stdout.readline():
            raise RuntimeError("the daemon did not say it was ready")
        return
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"daemon exited {proc.returncode}")
        try:
            if _status(sock)["state"] == "ready":
                return
        except OSError:
            pass
        time.sleep(0.005)


def _status(sock: Path) -> dict[str, Any]:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.connect(str(sock))
        conn.sendall(b'{"jsonrpc": "2.0", "id": 1, "method": "status"}\n')
        reply: dict[str, Any] = json.loads(conn.makefile("rb").readline())["result"]
        return reply


def _wait_saved(proc: subprocess.Popen[str], sock: Path, timeout_s: float = 300.0) -> None:
    """Until ``status`` says the index snapshot was written (polled every 0.1 s)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"daemon exited {proc.returncode}")
        if _status(sock)["snapshot"]["saved_at"] is not None:
            return
        time.sleep(0.1)
    raise RuntimeError("the daemon wrote no index snapshot")


def _peak_mb(pid: int) -> float:
    """``VmHWM`` of a running process (Linux), in MB; NaN elsewhere. Under ``taskset`` the
    pid is the daemon's own: taskset execs it."""
    try:
        lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    except OSError:
        return float("nan")
    return next((int(x.split()[1]) / 1024 for x in lines if x.startswith("VmHWM")), float("nan"))


def oneshot(starts: Starts, vault: Path) -> tuple[float, float]:
    """Seconds from start to exit of a one-shot query, and its peak RSS (MB)."""
    with starts.caches() as (flags, env):
        cmd = starts.command("query", "--vault", str(vault), "--in-process", "--json")
        return run([*cmd, *flags, "coffee meeting"], env)


def run(cmd: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Seconds from start to exit of ``cmd``, and its own peak RSS in MB (``wait4``)."""
    began = time.perf_counter()
    proc = subprocess.Popen(
        cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, cwd=NEUTRAL
    )
    _, status, usage = os.wait4(proc.pid, 0)
    took = time.perf_counter() - began
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode:
        raise subprocess.CalledProcessError(proc.returncode, cmd)
    return took, usage.ru_maxrss / 1024  # KiB on Linux


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--sizes", default="10000")
    ap.add_argument("--vault", type=Path, action="append", help="a vault (instead of --sizes)")
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--kinds", default=",".join(KINDS), help="of line, polled, oneshot")
    ap.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()) / "wikimem-bench")
    ap.add_argument("--cold", action="store_true", help="every start with empty caches")
    ap.add_argument("--one-cpu", action="store_true", help="every process on CPU 0 only")
    ap.add_argument("--tree", type=Path, default=ROOT, help="the checkout whose package runs")
    args = ap.parse_args()
    kinds = [k for k in args.kinds.split(",") if k]
    if not set(kinds) <= set(KINDS):
        ap.error(f"--kinds: expected some of {','.join(KINDS)}, got {args.kinds!r}")
    with tempfile.TemporaryDirectory(prefix="wmw-warm-") as warm_home:
        measure(args, kinds, Starts(args.tree.resolve(), args.cold, args.one_cpu, warm_home))
    return 0


def measure(args: argparse.Namespace, kinds: list[str], starts: Starts) -> None:
    """Every vault's starts, printed as a Markdown table row each."""
    sys.path.insert(0, str(ROOT))
    from bench.index import vault_for

    compileall.compile_dir(starts.tree / "wikimem_watch", quiet=1)
    env = {**os.environ, "PYTHONPATH": str(starts.tree)}
    python = [sys.executable, "-c"]
    floor = {
        "python": statistics.median(run([*python, "pass"], env)[0] for _ in range(args.runs)),
        "import numpy": statistics.median(
            run([*python, "import numpy"], env)[0] for _ in range(args.runs)
        ),
    }
    print(f"{starts}; " + " · ".join(f"{name} {s:.3f} s" for name, s in floor.items()))
    print(
        "| vault | daemon (ready line) | its peak RSS | after its first snapshot "
        "| daemon (polled status) | one-shot | its peak RSS |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|")
    vaults = args.vault or [vault_for(int(s), 0, args.workdir) for s in args.sizes.split(",")]
    for vault in vaults:
        if not starts.cold:
            oneshot(starts, vault)  # the snapshot, when there is none yet
        names = ("line", "peak", "saved_peak", "polled", "oneshot", "oneshot_peak")
        runs: dict[str, list[float]] = {k: [] for k in names}
        for _ in range(args.runs):  # alternated, so all kinds meet the same load
            if "line" in kinds:
                took, peak, saved_peak = daemon(starts, vault, polled=False)
                runs["line"].append(took)
                runs["peak"].append(peak)
                runs["saved_peak"].append(saved_peak)
            if "polled" in kinds:
                runs["polled"].append(daemon(starts, vault, polled=True)[0])
            if "oneshot" in kinds:
                took, peak = oneshot(starts, vault)
                runs["oneshot"].append(took)
                runs["oneshot_peak"].append(peak)
        med = {k: statistics.median(v) if v else float("nan") for k, v in runs.items()}
        print(
            f"| {vault.name} | {med['line']:.3f} s | {med['peak']:.1f} MB | "
            f"{med['saved_peak']:.1f} MB | {med['polled']:.3f} s | {med['oneshot']:.3f} s "
            f"| {med['oneshot_peak']:.1f} MB |"
        )


if __name__ == "__main__":
    raise SystemExit(main())
