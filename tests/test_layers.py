"""The package layout keeps its rule (ADR-0012): shells → daemon → retrieval → core →
vectors/timeparse → config/errors, never upward; no import cycles; the command line
imports nothing heavy until a command needs an engine; and a command a running daemon
answers builds its own parser alone and imports only the client path."""

from __future__ import annotations

import ast
import json
import os
import shutil
import socketserver
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import wikimem_watch
from wikimem_watch.daemon.runtime import default_socket_path
from wikimem_watch.settings import VaultLocation
from wikimem_watch.shells.cli import COMMANDS

PACKAGE = Path(wikimem_watch.__file__).parent
# Lower layers first; a module may import its own layer and the ones below it.
LAYERS = [
    (
        "errors",
        "record",
        "settings",
        "config",
        "vaultfile",
        "atomic",
        "core.models",
    ),  # core.models: the records every layer uses
    ("timeparse", "vectors"),
    ("core",),
    ("retrieval",),
    ("daemon",),
    ("shells",),
]


def layer_of(module: str) -> int:
    """The layer of a dotted module name under the package (``core.engine`` → 2)."""
    top = module.split(".")[0]
    for n, names in enumerate(LAYERS):
        if module in names:
            return n
    for n, names in enumerate(LAYERS):
        if top in names:
            return n
    raise AssertionError(f"{module!r} belongs to no layer: add it to LAYERS and ADR-0012")


def modules() -> dict[str, Path]:
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).with_suffix("")
        parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
        if parts and parts != ("__main__",):
            out[".".join(parts)] = path
    return out


def imports(module: str, path: Path, *, top_level_only: bool) -> set[str]:
    """The package modules ``module`` imports (dotted, relative to the package)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    is_pkg = path.name == "__init__.py"
    nodes = tree.body if top_level_only else list(ast.walk(tree))
    found: set[str] = set()
    for node in nodes:
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".") if is_pkg else module.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)] if node.level > 1 else base
            elif node.module and node.module.startswith("wikimem_watch"):
                base = []
            else:
                continue
            name = (node.module or "").removeprefix("wikimem_watch").lstrip(".")
            target = ".".join([*base, name] if name else base)
            if node.module is None:  # `from . import zh, en`: the submodules themselves
                found.update(f"{target}.{a.name}".lstrip(".") for a in node.names)
            else:
                found.add(target)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("wikimem_watch."):
                    found.add(alias.name.removeprefix("wikimem_watch."))
    # `from .. import __version__` names the package root, which is below every layer.
    return {f for f in found if f and f != "__version__"}


def test_no_module_imports_a_layer_above_its_own() -> None:
    wrong = []
    for module, path in modules().items():
        for target in imports(module, path, top_level_only=False):
            if layer_of(target) > layer_of(module):
                wrong.append(f"{module} imports {target}")
    assert not wrong, "\n".join(wrong)


def test_module_level_imports_have_no_cycles() -> None:
    graph = {m: imports(m, p, top_level_only=True) for m, p in modules().items()}
    state: dict[str, int] = {}  # 1 visiting, 2 done

    def visit(node: str, trail: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph.get(node, ())):
            if nxt not in graph:  # `from .x import name` where x is a package's attribute
                continue
            if state.get(nxt) == 1:
                raise AssertionError("import cycle: " + " → ".join([*trail, node, nxt]))
            if state.get(nxt) is None and nxt in graph:
                visit(nxt, [*trail, node])
        state[node] = 2

    for module in graph:
        if module not in state:
            visit(module, [])


HEAVY = (
    "numpy",
    "watchdog",
    "markdown_it",
    "typing",
    "dataclasses",
    "inspect",
    "wikimem_watch.config",
    "wikimem_watch.core",
    "wikimem_watch.retrieval",
    "wikimem_watch.vectors",
)
# What `--help` and a command's `--help` load of the package: the parsers and the printing.
PARSING = {
    "wikimem_watch",
    "wikimem_watch.errors",
    "wikimem_watch.shells",
    "wikimem_watch.shells.cli",
    "wikimem_watch.shells.output",
}
# What a reading command answered by a running daemon loads of the package (ADR-0012).
CLIENT_PATH = PARSING | {
    "wikimem_watch.record",
    "wikimem_watch.settings",
    "wikimem_watch.vaultfile",
    "wikimem_watch.daemon",
    "wikimem_watch.daemon.protocol",
    "wikimem_watch.daemon.runtime",
    "wikimem_watch.shells.access",
    "wikimem_watch.shells.client",
    "wikimem_watch.shells.reading",
}

# Runs the CLI in a fresh interpreter, recording the subcommand parsers it builds; the last
# stderr line reports them, the exit status and every module loaded.
RUN_CLI = """
import argparse, json, sys
built = []
add_parser = argparse._SubParsersAction.add_parser
def recording(self, name, **kwargs):
    built.append(name)
    return add_parser(self, name, **kwargs)
argparse._SubParsersAction.add_parser = recording
from wikimem_watch.shells.cli import main
try:
    code = main(sys.argv[1:])
except SystemExit as exc:
    code = exc.code
report = {"code": code, "parsers": built, "modules": sorted(sys.modules)}
print(json.dumps(report), file=sys.stderr)
"""


def run_cli(*argv: str) -> tuple[dict[str, Any], str]:
    done = subprocess.run(
        [sys.executable, "-c", RUN_CLI, *argv], capture_output=True, text=True, timeout=60
    )
    report: dict[str, Any] = json.loads(done.stderr.splitlines()[-1])
    return report, done.stdout


def heavy_in(modules: list[str]) -> list[str]:
    return [m for m in modules if m.startswith(HEAVY)]


def ours(modules: list[str]) -> set[str]:
    return {m for m in modules if m.split(".")[0] == "wikimem_watch"}


def test_the_command_line_imports_nothing_heavy_until_it_needs_an_engine() -> None:
    code = "import sys, wikimem_watch.shells.cli\nprint(sorted(sys.modules))\n"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    loaded = ast.literal_eval(out)
    assert not heavy_in(loaded), f"the CLI imported {heavy_in(loaded)} at start"
    assert ours(loaded) <= PARSING, f"the CLI imported {sorted(ours(loaded) - PARSING)}"


@pytest.mark.parametrize(
    ("argv", "parsers"),
    [
        (("--help",), [*COMMANDS, "diary", "wiki", "delete"]),
        (("query", "--help"), ["query"]),
        (("write", "diary", "--help"), ["write", "diary", "wiki", "delete"]),
    ],
)
def test_help_builds_the_parsers_it_shows_and_imports_no_command(
    argv: tuple[str, ...], parsers: list[str]
) -> None:
    report, out = run_cli(*argv)
    assert report["code"] == 0 and out.startswith("usage: wikimem-watch")
    assert sorted(report["parsers"]) == sorted(parsers)
    assert not heavy_in(report["modules"])
    assert ours(report["modules"]) <= PARSING, sorted(ours(report["modules"]) - PARSING)


class FakeDaemon(socketserver.StreamRequestHandler):
    """Answers every request line as a daemon would, with a small canned result."""

    def handle(self) -> None:
        for line in self.rfile:
            request = json.loads(line)
            method = request["method"]
            result: object = {"q": "tea", "hits": [{"id": "diary/2026-01-01.md#10:00"}]}
            if method == "days":
                result = {"days": [{"date": "2026-01-01", "entries": 1}]}
            elif method != "query":
                result = {"method": method}
            reply = {"jsonrpc": "2.0", "id": request["id"], "result": result}
            self.wfile.write(json.dumps(reply).encode() + b"\n")


@pytest.fixture
def daemon_vault() -> Iterator[Path]:
    """A vault with a fake daemon on its default socket (a short path: AF_UNIX limits it)."""
    vault = Path(tempfile.mkdtemp(prefix="wmw-l-")).resolve()
    sock = default_socket_path(VaultLocation(vault, None, None))
    sock.parent.mkdir()
    server = socketserver.ThreadingUnixStreamServer(str(sock), FakeDaemon)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield vault
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
        shutil.rmtree(vault)


@pytest.mark.parametrize(
    "argv", [("query", "--json", "tea"), ("days", "--json"), ("status", "--json")]
)
def test_a_command_a_daemon_answers_builds_one_parser_and_imports_only_the_client_path(
    daemon_vault: Path, argv: tuple[str, ...]
) -> None:
    report, out = run_cli(argv[0], "--vault", str(daemon_vault), *argv[1:])
    assert report["code"] == 0 and json.loads(out), out
    assert report["parsers"] == [argv[0]]
    loaded = report["modules"]
    assert not heavy_in(loaded), f"{argv[0]} imported {heavy_in(loaded)}"
    assert ours(loaded) <= CLIENT_PATH, sorted(ours(loaded) - CLIENT_PATH)
    # the daemon answered on the default socket: the lock (hashed name, maybe in the temp
    # dir) was never looked up
    assert not {"hashlib", "tempfile"} & set(loaded)


def test_a_one_shot_query_from_a_valid_snapshot_loads_no_markdown_yaml_or_http(
    tmp_path: Path,
) -> None:
    # A start from the index snapshot parses no note and embeds nothing, so markdown-it,
    # PyYAML and urllib.request stay unloaded (ADR-0019, "Start from a snapshot").
    vault = tmp_path / "vault"
    notes = {
        "diary/2026-01-01.md": "## 09:00\ncat tea\n",
        "wiki/a.md": "---\ntags: [x]\n---\n## Item\ntea run\n",  # front matter: YAML
        "notes/b.md": "# Bee\n```\n## not a heading\n```\ntea\n",  # a fence: markdown-it
        # more candidates than the information pool: its selection runs in full
        "diary/2026-01-02.md": "".join(f"## 10:{m:02d}\ntea number {m}\n\n" for m in range(30)),
    }
    for rel, text in notes.items():
        (vault / rel).parent.mkdir(parents=True, exist_ok=True)
        (vault / rel).write_text(text, encoding="utf-8")
        old = 1_700_000_000  # long before now: no file is racy, so none is read again
        os.utime(vault / rel, (old, old))
    argv = ("query", "--vault", str(vault), "--in-process", "--json", "tea")
    cold, _ = run_cli(*argv)  # scans, then writes the snapshot
    assert {"markdown_it", "yaml"} <= set(cold["modules"]), "the control parsed nothing"
    # a run that writes the snapshot journals what it applied (ADR-0016); one that does not
    # loads neither the journal nor the change feed
    assert "wikimem_watch.daemon.subscriptions" in cold["modules"]
    warm, out = run_cli(*argv)
    assert warm["code"] == 0 and len(json.loads(out)["hits"]) == 10, out
    # numpy.ma: np.unique and np.union1d import it on first use (~10-25 ms)
    unused = {"markdown_it", "yaml", "urllib.request", "numpy.ma", "wikimem_watch.daemon.journal"}
    loaded = unused & set(warm["modules"])
    assert not loaded, f"a start from the snapshot imported {sorted(loaded)}"
