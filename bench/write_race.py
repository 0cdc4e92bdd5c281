"""The write race, N times in a row: 4 agents × 50 ``append_diary`` over the socket and a
hand writer (O_APPEND and editor-style saves, see race_writers.py) on one day file.

    python bench/write_race.py --runs 20

Each run uses a fresh vault and daemon and reports entries lost, duplicated, the daemon's
re-applies and rescues (from its log), ``check`` and the time taken.
"""

from __future__ import annotations

import argparse
import json
import re
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
RACERS = HERE / "race_writers.py"
DAY = "2026-07-21"


def rpc(sock: Path, method: str, params: dict[str, object] | None = None) -> object:
    with socket.socket(socket.AF_UNIX) as s:
        s.connect(str(sock))
        s.sendall(
            json.dumps(
                {"jsonrpc": "2.0", "id": 1, "method": method, "params": params or {}}
            ).encode()
            + b"\n"
        )
        return json.loads(s.makefile("rb").readline())["result"]


def one_run(agents: int, each: int, by_hand: int, hand_mode: str = "mixed") -> dict[str, object]:
    with tempfile.TemporaryDirectory() as tmp:
        vault = Path(tmp) / "vault"
        (vault / "diary").mkdir(parents=True)
        day_file = vault / "diary" / f"{DAY}.md"
        day_file.write_text(f"# {DAY}\n\n## 12:00\nnoon by hand\n", encoding="utf-8")
        sock = Path(tempfile.gettempdir()) / f"wmw-race-{time.monotonic_ns() % 10**8}.sock"
        log = open(Path(tmp) / "daemon.log", "w+")
        cmd = [sys.executable, "-m", "wikimem_watch", "--log-level", "INFO", "serve", str(vault)]
        daemon = subprocess.Popen([*cmd, "--socket", str(sock)], stdout=log, stderr=log)
        try:
            while True:
                try:
                    if rpc(sock, "status")["state"] == "ready":  # type: ignore[index]
                        break
                except OSError:
                    time.sleep(0.02)
            started = time.perf_counter()
            procs = [
                subprocess.Popen(
                    [
                        sys.executable,
                        str(RACERS),
                        "agent",
                        str(sock),
                        DAY,
                        str(each),
                        f"w{n}",
                        str(n),
                    ]
                )
                for n in range(agents)
            ]
            procs.append(
                subprocess.Popen(
                    [
                        sys.executable,
                        str(RACERS),
                        "hand",
                        str(day_file),
                        str(by_hand),
                        "hand",
                        "7",
                        hand_mode,
                    ]
                )
            )
            codes = [p.wait() for p in procs]
            elapsed = time.perf_counter() - started
            time.sleep(6.0)  # past the re-apply window: whatever is there now stays
            text = day_file.read_text(encoding="utf-8")
            found = Counter(re.findall(r"\b((?:w\d|hand)-\d+) (?:wrote|typed) this", text))
            expected = {f"w{n}-{i}" for n in range(agents) for i in range(each)}
            expected |= {f"hand-{i}" for i in range(by_hand)}
            check = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "wikimem_watch",
                    "check",
                    "--socket",
                    str(sock),
                    "--vault",
                    str(vault),
                ],
                capture_output=True,
                text=True,
            )
            log.seek(0)
            daemon_log = log.read()
            return {
                "exit_codes_ok": all(c == 0 for c in codes),
                "lost": sorted(expected - set(found)),
                "duplicated": sorted(k for k, v in found.items() if v > 1),
                "reapplied": daemon_log.count("re-applying it"),
                "rescued": daemon_log.count("were moved over"),
                "check_ok": check.returncode == 0,
                "writes_s": round(elapsed, 2),
                "log": [ln for ln in daemon_log.splitlines() if "WARNING" in ln or "ERROR" in ln][
                    :5
                ],
            }
        finally:
            daemon.terminate()
            daemon.wait(10)
            log.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--agents", type=int, default=4)
    ap.add_argument("--each", type=int, default=50)
    ap.add_argument("--by-hand", type=int, default=30)
    ap.add_argument(
        "--hand-mode",
        choices=["mixed", "append"],
        default="mixed",
        help="the hand writer's saves: O_APPEND and editor-style renames, or O_APPEND only",
    )
    args = ap.parse_args()
    bad = 0
    for n in range(args.runs):
        result = one_run(args.agents, args.each, args.by_hand, args.hand_mode)
        ok = (
            result["exit_codes_ok"]
            and not result["lost"]
            and not result["duplicated"]
            and result["check_ok"]
        )
        bad += not ok
        print(json.dumps({"run": n + 1, "ok": ok, **result}), flush=True)
    print(f"{args.runs - bad}/{args.runs} runs: nothing lost or duplicated, check passed")
    raise SystemExit(1 if bad else 0)


if __name__ == "__main__":
    main()
