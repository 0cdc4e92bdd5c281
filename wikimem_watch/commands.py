"""Command handlers: each turns parsed flags into engine or socket calls and prints."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from typing import Any

from .config import Config, load_config
from .engine import Engine
from .errors import ConfigError, WatchError
from .query import run_query
from .request import QueryRequest

AddFlags = Callable[[argparse.ArgumentParser], None]


def config_from_args(args: argparse.Namespace) -> Config:
    if args.vault is None:
        raise ConfigError("--vault DIR is required")
    flags = {
        name: getattr(args, name, None)
        for name in (
            "cache_dir",
            "include",
            "exclude",
            "embed",
            "embed_url",
            "embed_model",
            "socket",
        )
    }
    return load_config(args.vault, flags)


def open_engine(config: Config) -> Engine:
    engine = Engine(config)
    engine.scan()
    return engine


def query_command(args: argparse.Namespace) -> int:
    from .cli import print_result, request_from_args

    config = config_from_args(args)
    engine = open_engine(config)
    if args.text == "-":
        return _batch(engine)
    req = QueryRequest.from_dict(request_from_args(args))
    return print_result(run_query(engine, req), args.json)


def _batch(engine: Engine) -> int:
    """One JSON request per stdin line → one JSON result per stdout line, in order."""
    for line in sys.stdin:
        if not line.strip():
            continue
        out: dict[str, Any]
        try:
            out = run_query(engine, QueryRequest.from_dict(json.loads(line)))
        except json.JSONDecodeError as exc:
            out = {
                "error": {"code": -32700, "message": f"bad JSON: {exc.msg} at column {exc.colno}"}
            }
        except WatchError as exc:
            out = {"error": {"code": exc.code, "message": exc.message}}
        print(json.dumps(out, ensure_ascii=False), flush=True)
    return 0


def add_daemon_commands(
    sub: Any, add_vault: Callable[..., None], add_index_flags: AddFlags
) -> None:
    """Register handlers on the parsers ``cli.build_parser`` made, and the daemon commands."""
    from .cli import parse_time_command

    sub.choices["query"].set_defaults(handler=query_command)
    sub.choices["parse-time"].set_defaults(handler=parse_time_command)
