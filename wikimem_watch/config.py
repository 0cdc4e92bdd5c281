"""Configuration, resolved in one place: defaults, then ``<cache>/config.toml``, then
``WIKIMEM_WATCH_<FIELD>`` environment variables, then command-line flags (the last wins)."""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from pathlib import Path

from .errors import ConfigError

CACHE_DIRNAME = ".wikimem"


@dataclass(frozen=True, slots=True)
class Config:
    """Everything the engine and daemon read. Flags reuse these field names."""

    vault: Path
    cache_dir: Path | None = None  # default <vault>/.wikimem
    socket: Path | None = None  # default derived from the cache dir (see daemon.socket_path)
    include: tuple[str, ...] = ("*",)
    exclude: tuple[str, ...] = ()
    k1: float = 1.2
    b: float = 0.4
    stop_words: bool = True
    stem: bool = True
    jieba: bool = False
    weight_bm25: float = 1.0
    weight_vector: float = 1.5  # ADR-0008
    weight_recency: float = 0.05
    half_life_days: float = 90.0
    gate_fallback_ratio: float = 0.4
    debounce_ms: int = 25
    poll: bool = False
    embed: str = "none"  # none | local | http | hash
    embed_url: str | None = None
    embed_model: str | None = None
    embed_api_key_env: str = "WIKIMEM_WATCH_EMBED_API_KEY"
    embed_batch: int = 32
    max_request_bytes: int = 1024 * 1024
    max_buffered_bytes: int = 32 * 1024 * 1024  # unfinished lines across all connections
    max_connections: int = 256
    idle_timeout_s: float = 60.0  # 0: never close an idle connection

    @property
    def cache_path(self) -> Path:
        return self.cache_dir if self.cache_dir is not None else self.vault / CACHE_DIRNAME


_TUPLE_FIELDS = {"include", "exclude"}
_PATH_FIELDS = {"cache_dir", "socket"}


def _coerce(name: str, value: object, source: str) -> object:
    """Turn a TOML/env/flag value into the field's type, naming the bad value on failure."""
    kinds = {f.name: f.type for f in fields(Config)}
    kind = str(kinds[name])
    try:
        if name in _TUPLE_FIELDS:
            if isinstance(value, str):
                return tuple(v.strip() for v in value.split(",") if v.strip())
            if isinstance(value, list | tuple):
                return tuple(str(v) for v in value)
            raise TypeError
        if name in _PATH_FIELDS:
            return None if value in (None, "") else Path(str(value)).expanduser()
        if kind == "bool":
            if isinstance(value, bool):
                return value
            text = str(value).strip().lower()
            if text in ("1", "true", "yes", "on"):
                return True
            if text in ("0", "false", "no", "off"):
                return False
            raise ValueError
        if kind == "int":
            return int(str(value))
        if kind == "float":
            return float(str(value))
        if kind == "str":
            return str(value)
        if "str | None" in kind:
            return None if value in (None, "") else str(value)
    except (TypeError, ValueError):
        raise ConfigError(f"{source}: {name}={value!r} is not a valid {kind}") from None
    raise ConfigError(f"{source}: {name!r} cannot be set here")


def load_config(vault: Path | str, overrides: Mapping[str, object] | None = None) -> Config:
    """Resolve the configuration for ``vault``; ``overrides`` are flags (``None`` = not given)."""
    root = Path(vault).expanduser()
    if not root.is_dir():
        raise ConfigError(f"vault {str(root)!r} is not a directory")
    settable = {f.name for f in fields(Config)} - {"vault"}
    values: dict[str, object] = {}
    flags = {k: v for k, v in (overrides or {}).items() if v is not None}
    cache_dir = flags.get("cache_dir") or os.environ.get("WIKIMEM_WATCH_CACHE_DIR")
    cache = Path(str(cache_dir)).expanduser() if cache_dir else root / CACHE_DIRNAME
    toml_path = cache / "config.toml"
    if toml_path.is_file():
        try:
            data = tomllib.loads(toml_path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
            raise ConfigError(f"{toml_path}: {exc}") from None
        for key, value in data.items():
            if key not in settable:
                raise ConfigError(f"{toml_path}: unknown setting {key!r}")
            values[key] = _coerce(key, value, str(toml_path))
    for name in settable:
        env = os.environ.get(f"WIKIMEM_WATCH_{name.upper()}")
        if env is not None:
            values[name] = _coerce(name, env, f"WIKIMEM_WATCH_{name.upper()}")
    if os.environ.get("WIKIMEM_SOCK"):
        values["socket"] = Path(os.environ["WIKIMEM_SOCK"]).expanduser()
    for name, value in flags.items():
        if name not in settable:
            raise ConfigError(f"unknown setting {name!r}")
        values[name] = _coerce(name, value, f"--{name.replace('_', '-')}")
    config = replace(Config(vault=root.resolve()), **values)  # type: ignore[arg-type]
    if config.weight_bm25 <= 0:
        raise ConfigError(f"weight_bm25={config.weight_bm25!r}: BM25 is never switched off (> 0)")
    if config.half_life_days <= 0:
        raise ConfigError(f"half_life_days={config.half_life_days!r} must be > 0")
    if config.embed not in ("none", "local", "http", "hash"):
        raise ConfigError(f"embed={config.embed!r}: expected one of none, local, http, hash")
    return config
