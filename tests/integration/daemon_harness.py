"""Helpers for daemon tests: a real ``serve`` subprocess on a short socket path, a raw
JSON-RPC client, the CLI in a subprocess, and polling with a deadline (never timing)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
START_DEADLINE_S = 30.0


def wikimem(
    *args: str,
    stdin: str | None = None,
    timeout: float = 60,
    env_extra: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run the CLI in a subprocess (as a user would)."""
    return subprocess.run(
        [sys.executable, "-m", "wikimem_watch", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**child_env(), **(env_extra or {})},
    )


def child_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    env.pop("WIKIMEM_SOCK", None)
    return env


def short_socket_path() -> Path:
    # tmp_path can exceed the AF_UNIX limit on macOS; the temp dir itself is short.
    return Path(tempfile.gettempdir()) / f"wmw-{uuid.uuid4().hex[:10]}.sock"


class Rpc:
    """A raw JSON-RPC connection to the daemon's socket."""

    def __init__(self, path: Path, timeout_s: float = 30.0) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(timeout_s)
        try:
            self.sock.connect(str(path))
        except OSError:
            self.sock.close()
            raise
        self.reader = self.sock.makefile("rb")
        self.next_id = 0

    def send_raw(self, data: bytes) -> dict[str, Any] | None:
        self.sock.sendall(data)
        line = self.reader.readline()
        return json.loads(line) if line else None

    def call(self, method: str, params: dict[str, object] | None = None) -> dict[str, Any]:
        self.next_id += 1
        msg: dict[str, object] = {"jsonrpc": "2.0", "id": self.next_id, "method": method}
        if params is not None:
            msg["params"] = params
        reply = self.send_raw(json.dumps(msg).encode() + b"\n")
        assert reply is not None, "daemon closed the connection"
        return reply

    def result(self, method: str, params: dict[str, object] | None = None) -> Any:
        reply = self.call(method, params)
        assert "result" in reply, reply
        return reply["result"]

    def close(self) -> None:
        self.reader.close()
        self.sock.close()


class DaemonProc:
    """One ``wikimem-watch serve`` subprocess and its socket."""

    def __init__(self, vault: Path, sock: Path, *extra: str) -> None:
        self.vault, self.sock = vault, sock
        self.log = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "wikimem_watch",
                "serve",
                str(vault),
                "--socket",
                str(sock),
                *extra,
            ],
            stdout=self.log,
            stderr=self.log,
            env=child_env(),
        )

    def wait_ready(self, deadline_s: float = START_DEADLINE_S) -> None:
        deadline = time.monotonic() + deadline_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"daemon exited {self.proc.returncode}: {self.output()}")
            try:
                rpc = Rpc(self.sock, 5)
            except OSError:
                time.sleep(0.02)
                continue
            try:
                if rpc.result("status")["state"] == "ready":
                    return
            finally:
                rpc.close()
            time.sleep(0.02)
        raise AssertionError(f"daemon not ready in time: {self.output()}")

    def rpc(self) -> Rpc:
        return Rpc(self.sock)

    def result(self, method: str, params: dict[str, object] | None = None) -> Any:
        """One request on a fresh connection (closed afterwards)."""
        rpc = Rpc(self.sock)
        try:
            return rpc.result(method, params)
        finally:
            rpc.close()

    def output(self) -> str:
        self.log.seek(0)
        return self.log.read().decode(errors="replace")

    def stop(self) -> None:
        """Terminate, wait(5), kill, unlink: never leaves a process or a socket behind."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self.log.close()
        self.sock.unlink(missing_ok=True)


def eventually(check: Callable[[], bool], what: str, deadline_s: float = 15.0) -> None:
    """Poll ``check`` until it holds (no assertion on how long it took)."""
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.02)
    raise AssertionError(f"never became true: {what}")
