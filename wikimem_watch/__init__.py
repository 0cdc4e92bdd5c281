"""wikimem-watch: a live hybrid index over a Markdown memory vault.

The daemon (``wikimem-watch serve``) and the CLI are the usual way in; the same engine is
usable from Python::

    from wikimem_watch import Engine, QueryRequest, load_config, run_query

    engine = Engine(load_config("vault_example"))
    engine.scan()
    result = run_query(engine, QueryRequest.from_dict({"q": "火锅", "k": 3}))
"""

from __future__ import annotations

__version__ = "0.1.0"

TYPE_CHECKING = False  # importing `typing` here would cost every CLI run; type checkers see True
if TYPE_CHECKING:  # what type checkers see; at run time the names load on first use
    from .config import Config, load_config
    from .core.engine import Engine
    from .core.models import Entry, Link
    from .errors import BadRequest, ConfigError, DaemonUnavailable, NotFound, WatchError
    from .retrieval.query import run_query
    from .retrieval.request import QueryRequest
    from .timeparse import TimeWindow, parse_time_range

# Public name → the module that defines it, imported on first use (PEP 562), so that
# ``import wikimem_watch`` (and a CLI command that only talks to a daemon) stays cheap.
_EXPORTS = {
    "BadRequest": ".errors",
    "Config": ".config",
    "ConfigError": ".errors",
    "DaemonUnavailable": ".errors",
    "Engine": ".core.engine",
    "Entry": ".core.models",
    "Link": ".core.models",
    "NotFound": ".errors",
    "QueryRequest": ".retrieval.request",
    "TimeWindow": ".timeparse",
    "WatchError": ".errors",
    "load_config": ".config",
    "parse_time_range": ".timeparse",
    "run_query": ".retrieval.query",
}

__all__ = [
    "BadRequest",
    "Config",
    "ConfigError",
    "DaemonUnavailable",
    "Engine",
    "Entry",
    "Link",
    "NotFound",
    "QueryRequest",
    "TimeWindow",
    "WatchError",
    "__version__",
    "load_config",
    "parse_time_range",
    "run_query",
]


def __getattr__(name: str) -> object:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'wikimem_watch' has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
