"""The package layout keeps its rule (ADR-0012): shells → daemon → retrieval → core →
vectors/timeparse → config/errors, never upward; no import cycles; and the command line
imports nothing heavy until a command needs an engine."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import wikimem_watch

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


def test_the_command_line_imports_nothing_heavy_until_it_needs_an_engine() -> None:
    code = (
        "import sys, wikimem_watch.shells.cli\n"
        "heavy = ('numpy', 'watchdog', 'markdown_it', 'wikimem_watch.core', "
        "'wikimem_watch.retrieval', 'wikimem_watch.vectors', 'typing')\n"
        "print(sorted(m for m in sys.modules if m.startswith(heavy)))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[]", f"the CLI imported {out.strip()} at start"
