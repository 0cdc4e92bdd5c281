"""Writer processes for the race tests (run as scripts by tests and bench/write_race.py).

``agent SOCK DAY N TAG SEED``: N ``append_diary`` calls over the socket, random times.
``hand PATH N TAG SEED [MODE]``: N entries written by hand into one day file; MODE ``mixed``
(default) alternates ``open(O_APPEND)/write/close`` with an editor-style save (read, write a
temp file, rename), ``append`` uses only the former.

The editor-style save re-reads the file right before its rename and starts over when it
changed: a careful editor (Obsidian, vim with autoread) reloads on an external change
instead of saving a stale buffer. Between that re-read and the rename there is still a
window of microseconds in which a daemon write can be overwritten; the daemon re-applies a
write that vanishes that way (ADR-0013), and the test checks that nothing is lost even so.
"""

from __future__ import annotations

import json
import os
import random
import socket
import sys
import time
from pathlib import Path


def agent(sock_path: str, day: str, n: int, tag: str, seed: int) -> None:
    rng = random.Random(seed)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(60)
    sock.connect(sock_path)
    reader = sock.makefile("rb")
    for i in range(n):
        hhmm = f"{rng.randrange(24):02d}:{rng.randrange(60):02d}"
        params = {"text": f"{tag}-{i} wrote this", "date": day, "time": hhmm, "owner": tag}
        msg = {"jsonrpc": "2.0", "id": i, "method": "append_diary", "params": params}
        sock.sendall(json.dumps(msg).encode() + b"\n")
        reply = json.loads(reader.readline())
        if "result" not in reply:
            raise SystemExit(f"{tag}-{i}: {reply}")
    sock.close()


def hand(path: str, n: int, tag: str, seed: int, mode: str = "mixed") -> None:
    rng = random.Random(seed)
    target = Path(path)
    for i in range(n):
        hhmm = f"{rng.randrange(24):02d}:{rng.randrange(60):02d}"
        entry = f"\n## {hhmm}\n{tag}-{i} typed this\n"
        if i % 2 == 0 or mode == "append":
            with open(target, "a", encoding="utf-8") as fh:
                fh.write(entry)
                fh.flush()
                if os.environ.get("WMW_RACE_TRACE"):  # where each hand entry went (debugging)
                    st = os.fstat(fh.fileno())
                    print(f"{tag}-{i} ino={st.st_ino} size={st.st_size}", file=sys.stderr)
        else:
            _editor_save(target, entry)
        time.sleep(rng.random() * 0.01)


def _editor_save(target: Path, entry: str) -> None:
    tmp = target.with_name(f".{target.name}.swp-{os.getpid()}")
    while True:
        before = target.read_bytes()
        tmp.write_bytes(before + entry.encode())
        if target.read_bytes() == before:  # reload on external change, as editors do
            os.rename(tmp, target)
            return


if __name__ == "__main__":
    if sys.argv[1] == "agent":
        agent(sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5], int(sys.argv[6]))
    else:
        hand(sys.argv[2], int(sys.argv[3]), sys.argv[4], int(sys.argv[5]), *sys.argv[6:7])
