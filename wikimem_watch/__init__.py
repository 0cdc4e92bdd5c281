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

from .config import Config, load_config
from .core.engine import Engine
from .core.models import Entry, Link
from .errors import BadRequest, ConfigError, DaemonUnavailable, NotFound, WatchError
from .retrieval.query import run_query
from .retrieval.request import QueryRequest
from .timeparse import TimeWindow, parse_time_range

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
