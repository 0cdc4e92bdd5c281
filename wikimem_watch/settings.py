"""Settings, resolved in one place, with a trust boundary between the user and the vault.

Sources, the last wins: defaults; the **user's** file ``$XDG_CONFIG_HOME/wikimem-watch/
config.toml`` (``~/.config/...``); the **vault's** file ``<cache>/config.toml``;
``WIKIMEM_WATCH_<FIELD>`` environment variables (and ``WIKIMEM_SOCK``); command-line flags.

The vault may be synced from another machine or person (ADR-0010), so its file is
*untrusted*: it may tune ranking and choose which of its notes to index (``VAULT_SETTABLE``),
and it may pick an embedding endpoint only from those the user allowed (the user's
``embed_url`` and ``[endpoints.NAME]`` tables), by name or URL through ``embed_endpoint``.
Anything else it tries (a URL, an API-key variable, a cache or socket path, a socket limit)
is ignored with a warning that ``status`` shows; a vault file that is unreadable, not a
regular file, a symlink, oversized or malformed is ignored with a warning too. Nothing in
the vault can stop the daemon from starting. The user's sources are trusted: a bad value
there is a :class:`ConfigError` naming it.

This module resolves the values; :mod:`wikimem_watch.config` builds the ``Config`` record
from them. The split keeps ``dataclasses`` (and the cost of building a 37-field class) off a
command that only talks to a running daemon: it needs :func:`locate`, resolved by the same
code with the same checks, and never a ``Config`` (ADR-0012).
"""

from __future__ import annotations

import math
import os
import sys
from collections.abc import Callable, Mapping
from pathlib import Path

from .errors import ConfigError
from .record import Record
from .vaultfile import read_vault_file

TYPE_CHECKING = False  # `typing` costs a client run milliseconds; type checkers see True
if TYPE_CHECKING:
    from .config import Config

CACHE_DIRNAME = ".wikimem"
USER_CONFIG = Path("wikimem-watch") / "config.toml"
DEFAULT_API_KEY_ENV = "WIKIMEM_WATCH_EMBED_API_KEY"
EMBED_KINDS = ("none", "local", "http", "hash")
# What a file inside the vault may set: ranking, note selection, and choices that keep data
# on this machine. ``embed = "http"`` and ``embed_endpoint`` are checked against the
# endpoints the user allowed (see ``_vault_values``).
VAULT_SETTABLE = frozenset(
    (
        "include exclude k1 b stop_words stem heading_weight question_context jieba weight_bm25 "
        "weight_vector weight_recency weight_previous weight_question weight_information "
        "half_life_days debounce_ms poll embed embed_endpoint embed_batch embed_peer_grace_s"
    ).split()
)

# Every field of ``config.Config`` by its annotation: what a source may name and how its
# value is read. tests/unit/test_config.py keeps this and the class the same.
_FIELDS_BY_TYPE = {
    "Path": "vault",
    "Path | None": "cache_dir socket snapshot_dir",
    "tuple[str, ...]": "include exclude http_cors_origins warnings",
    "bool": "stop_words stem question_context jieba poll follow_external_symlinks "
    "http_allow_remote snapshot embed_remembered",
    "int": "heading_weight debounce_ms embed_batch max_request_bytes max_buffered_bytes "
    "max_connections",
    "float": "k1 b weight_bm25 weight_vector weight_recency weight_previous weight_question "
    "weight_information half_life_days embed_peer_grace_s idle_timeout_s",
    "str": "embed embed_api_key_env",
    "str | None": "embed_endpoint embed_url embed_model http",
}
FIELD_TYPES = {name: kind for kind, names in _FIELDS_BY_TYPE.items() for name in names.split()}
_TUPLE_FIELDS = {"include", "exclude", "http_cors_origins"}
_PATH_FIELDS = {"cache_dir", "socket", "snapshot_dir"}
_NOT_SETTINGS = {"vault", "warnings", "embed_remembered"}
# (low, high, low is exclusive) for every number: finite, and in a range that keeps the
# daemon responsive (a vault must not set a debounce of a day).
_RANGES: dict[str, tuple[float, float, bool]] = {
    "k1": (0.0, 100.0, False),
    "b": (0.0, 1.0, False),
    "weight_bm25": (0.0, 1e6, True),
    "weight_vector": (0.0, 1e6, False),
    "weight_recency": (0.0, 1e6, False),
    "weight_previous": (0.0, 1e6, False),
    "weight_question": (0.0, 1e6, False),
    "weight_information": (0.0, 1e6, False),
    "heading_weight": (1, 20, False),
    "half_life_days": (0.0, 365_000.0, True),
    "debounce_ms": (0, 10_000, False),
    "embed_batch": (1, 4096, False),
    "embed_peer_grace_s": (0.0, 60.0, False),
    "max_request_bytes": (1024, 1 << 30, False),
    "max_buffered_bytes": (1024, 1 << 34, False),
    "max_connections": (1, 65_536, False),
    "idle_timeout_s": (0.0, 86_400.0, False),
}


class VaultLocation(Record):
    """Where a vault's daemon is found: the resolved vault, its cache dir (``None``: the
    default ``<vault>/.wikimem``) and an explicit socket; what a client command builds
    instead of a ``Config`` (see the module docstring)."""

    __slots__ = ("vault", "cache_dir", "socket")

    def __init__(self, vault: Path, cache_dir: Path | None, socket: Path | None) -> None:
        self.vault = vault
        self.cache_dir = cache_dir
        self.socket = socket

    @property
    def cache_path(self) -> Path:
        return self.cache_dir if self.cache_dir is not None else self.vault / CACHE_DIRNAME


def user_cache_home() -> Path:
    """``$XDG_CACHE_HOME/wikimem-watch``, else ``~/.cache/wikimem-watch``."""
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg) if xdg and Path(xdg).is_absolute() else Path.home() / ".cache"
    return base / "wikimem-watch"


def cache_dir_problem(config: Config | VaultLocation) -> str | None:
    """Why the cache dir must not be used, before touching it; ``None`` when it may be.

    The default ``<vault>/.wikimem`` comes with the vault, maybe synced in from elsewhere:
    if it is a symlink, or resolves outside the vault, writing caches, a socket or a chmod
    there would write wherever it points. Only an explicit ``cache_dir`` may lie elsewhere
    (ADR-0011).
    """
    if config.cache_dir is not None:
        return None
    path = config.cache_path
    if not _within(config.vault, path):
        return (
            f"{str(path)!r} leads to {os.path.realpath(path)!r}, outside the vault: no cache "
            "or config.toml is read or written there (give --cache-dir to use a directory "
            "outside the vault)"
        )
    if path.is_symlink():
        return f"{str(path)!r} is a symlink inside the vault (not followed)"
    return None


def _within(root: Path, path: Path) -> bool:
    """True when ``path`` resolves (symlinks followed) to ``root`` or below it."""
    real_root, real = os.path.realpath(root), os.path.realpath(path)
    return real == real_root or real.startswith(real_root.rstrip(os.sep) + os.sep)


class Endpoint(Record):
    """An embedding endpoint the user allowed (``[endpoints.NAME]`` in the user's file)."""

    __slots__ = ("name", "url", "model", "api_key_env")

    def __init__(self, name: str, url: str, model: str | None, api_key_env: str) -> None:
        self.name = name
        self.url = url
        self.model = model
        self.api_key_env = api_key_env


def settable_fields() -> frozenset[str]:
    return frozenset(FIELD_TYPES) - _NOT_SETTINGS


def user_config_path() -> Path:
    """``$XDG_CONFIG_HOME/wikimem-watch/config.toml``, else ``~/.config/...``."""
    xdg = os.environ.get("XDG_CONFIG_HOME")
    base = Path(xdg) if xdg and Path(xdg).is_absolute() else Path.home() / ".config"
    return base / USER_CONFIG


def _coerce(name: str, value: object) -> object:
    """Turn a TOML/env/flag value into the field's type; ValueError names what is wrong."""
    kind = FIELD_TYPES[name]
    try:
        if name in _TUPLE_FIELDS:
            return _strings(value)
        if name in _PATH_FIELDS:
            return _path(value)
        if kind == "bool":
            if isinstance(value, bool):
                return value
            text = str(value).strip().lower()
            if text in ("1", "true", "yes", "on"):
                return True
            if text in ("0", "false", "no", "off"):
                return False
            raise ValueError
        out: object
        if kind == "int":
            out = int(str(value))
        elif kind == "float":
            out = float(str(value))
        elif kind == "str":
            out = str(value)
        else:  # "str | None"
            out = None if value in (None, "") else str(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name}={value!r} is not a valid {kind}") from None
    _check_range(name, out)
    return out


_URL_SCHEMES = ("http://", "https://")


def _strings(value: object) -> tuple[str, ...]:
    """ "a, b" or a list of strings (TypeError for anything else: [1, 2] is not a glob)."""
    if isinstance(value, str):
        return tuple(v.strip() for v in value.split(",") if v.strip())
    if isinstance(value, list | tuple) and all(isinstance(v, str) for v in value):
        return tuple(value)
    raise TypeError


def _path(value: object) -> Path | None:
    """An absolute path (a daemon records its socket for clients started elsewhere)."""
    if value in (None, ""):
        return None
    if not isinstance(value, str | Path):
        raise TypeError
    return Path(os.path.abspath(Path(value).expanduser()))


def _check_range(name: str, value: object) -> None:
    if name == "embed" and value not in EMBED_KINDS:
        raise ValueError(f"embed={value!r}: expected one of {', '.join(EMBED_KINDS)}")
    if name == "embed_url" and isinstance(value, str) and not value.startswith(_URL_SCHEMES):
        raise ValueError(f"embed_url={value!r}: expected an http:// or https:// URL")
    bounds = _RANGES.get(name)
    if bounds is None or not isinstance(value, int | float):
        return
    lo, hi, lo_open = bounds
    if not math.isfinite(value) or value < lo or (lo_open and value == lo) or value > hi:
        low = "(" if lo_open else "["
        extra = ": BM25 is never switched off" if name == "weight_bm25" else ""
        span = f"{low}{_number(lo)}, {_number(hi)}]"
        raise ValueError(f"{name}={value!r} must be a finite number in {span}{extra}")


def _number(bound: float) -> str:
    """A range bound as written in a config file: 1073741824, not 1.07374e+09."""
    return str(int(bound)) if float(bound).is_integer() else f"{bound:g}"


def _read_user_file(path: Path) -> tuple[dict[str, object], dict[str, Endpoint]]:
    """The user's settings and allowed endpoints; a problem is the user's ConfigError."""
    try:
        if not path.is_file():
            if path.exists():  # a folder, a FIFO (reading it would block), a device
                raise ConfigError(f"{path}: not a regular file; make it one or remove it")
            return {}, {}
    except OSError as exc:  # a folder on the way that cannot be searched
        raise ConfigError(f"{path}: {exc.strerror}") from None
    import tomllib  # only when there is a file: a client run without one skips the import

    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{path}: {exc}") from None
    endpoints = _endpoints(path, data.pop("endpoints", {}))
    values: dict[str, object] = {}
    for key, value in data.items():
        if key not in settable_fields():
            raise ConfigError(f"{path}: unknown setting {key!r}")
        try:
            values[key] = _coerce(key, value)
        except ValueError as exc:
            raise ConfigError(f"{path}: {exc}") from None
    return values, endpoints


def _endpoints(path: Path, table: object) -> dict[str, Endpoint]:
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: [endpoints] must be a table of [endpoints.NAME] tables")
    out: dict[str, Endpoint] = {}
    for name, entry in table.items():
        url = entry.get("url") if isinstance(entry, dict) else None
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise ConfigError(
                f'{path}: [endpoints.{name}] needs url = "http(s)://...", got {url!r}'
            )
        model = entry.get("model")
        key_env = entry.get("api_key_env", DEFAULT_API_KEY_ENV)
        if (model is not None and not isinstance(model, str)) or not isinstance(key_env, str):
            raise ConfigError(f"{path}: [endpoints.{name}]: model and api_key_env are strings")
        out[name] = Endpoint(name, url, model, key_env)
    return out


def _vault_values(
    path: Path, data: Mapping[str, object], user: Mapping[str, object]
) -> tuple[dict[str, object], list[str]]:
    """Keep what the vault may set; a warning for each key it may not, or that is bad."""
    values: dict[str, object] = {}
    warnings: list[str] = []
    where = "flags, WIKIMEM_WATCH_* variables or the user's config file"
    for key, value in data.items():
        if key not in settable_fields():
            warnings.append(f"{path}: unknown setting {key!r} ignored")
            continue
        if key not in VAULT_SETTABLE:
            warnings.append(
                f"{path}: {key!r} ignored: a file inside the vault may not set it "
                f"(it crosses the trust boundary; set it with {where}, {user_config_path()})"
            )
            continue
        try:
            values[key] = _coerce(key, value)
        except ValueError as exc:
            warnings.append(f"{path}: {exc}; ignored")
    if values.get("embed") == "http" and not user.get("embed_url"):
        del values["embed"]
        warnings.append(
            f"{path}: embed = 'http' ignored: the user has allowed no endpoint; "
            "choose one of the user's [endpoints] with embed_endpoint"
        )
    return values, warnings


def _endpoint(choice: object, endpoints: Mapping[str, Endpoint]) -> Endpoint | None:
    """The user's endpoint named (or with the URL) ``choice``, or None."""
    return endpoints.get(str(choice)) or next(
        (e for e in endpoints.values() if e.url.rstrip("/") == str(choice).rstrip("/")), None
    )


def _apply_endpoint(
    values: dict[str, object], endpoints: Mapping[str, Endpoint], above: set[str]
) -> None:
    """Resolve ``embed_endpoint`` (a name or URL the user allowed) into embed, url, model and
    key env, each unless a source above the one that picked the endpoint set it (``above``):
    ``--embed none`` beats a vault's pick. A vault's unknown pick was dropped already; an
    unknown one from the user is an error."""
    choice = values.get("embed_endpoint")
    if choice is None:
        return
    found = _endpoint(choice, endpoints)
    if found is None:
        allowed = ", ".join(sorted(endpoints)) or "none"
        raise ConfigError(
            f"embed_endpoint {choice!r} is not one of the user's [endpoints] ({allowed})"
        )
    if "embed" in above and values.get("embed") != "http":
        return  # the endpoint is switched off by a source that outranks its pick
    picked = {"embed": "http", "embed_url": found.url, "embed_api_key_env": found.api_key_env}
    if found.model is not None:
        picked["embed_model"] = found.model
    values.update({k: v for k, v in picked.items() if k not in above})


def resolve_settings(
    vault: Path | str,
    overrides: Mapping[str, object] | None = None,
    *,
    remembered: Callable[[Path], str | None] | None = None,
) -> tuple[Path, dict[str, object], list[str], bool]:
    """Resolve the settings for ``vault``; ``overrides`` are flags (``None`` = not given).

    Returns the vault as given (expanded, not resolved), the values every source set, the
    warnings about what was ignored, and whether ``embed`` was ``remembered`` (cache dir →
    embedder kind or None), which supplies it when no source sets it: in-process runs use
    the embedder this host's last daemon used.
    """
    root = Path(vault).expanduser()
    if not root.is_dir():
        raise ConfigError(f"vault {str(root)!r} is not a directory")
    if os.path.realpath(root) == os.path.realpath(os.sep):  # a scan would read every disk
        raise ConfigError(f"vault {str(root)!r} is the whole file system; give your vault's folder")
    user, endpoints = _read_user_file(user_config_path())
    env = _env_values(user, endpoints)
    if os.environ.get("WIKIMEM_SOCK"):
        env["socket"] = Path(os.environ["WIKIMEM_SOCK"]).expanduser()
    flags: dict[str, object] = {}
    for name, value in (overrides or {}).items():
        if value is None:
            continue
        if name not in settable_fields():
            raise ConfigError(f"unknown setting {name!r}")
        flags[name] = _trusted(name, value, f"--{name.replace('_', '-')}")
    trusted = {**user, **env, **flags}
    cache_dir = trusted.get("cache_dir")
    vault_file = (Path(str(cache_dir)) if cache_dir else root / CACHE_DIRNAME) / "config.toml"
    if cache_dir or _within(root, vault_file.parent):
        raw_vault, warnings = read_vault_file(vault_file)
    else:  # a .wikimem that leads out of the vault is never read (ADR-0011)
        raw_vault, warnings = {}, [f"{vault_file}: ignored: its folder leads outside the vault"]
    from_vault, more = _vault_values(vault_file, raw_vault, trusted)
    warnings += more
    picked = from_vault.get("embed_endpoint")
    if picked is not None and _endpoint(picked, endpoints) is None:
        # Refused here, before it could shadow the user's own pick (ADR-0010).
        del from_vault["embed_endpoint"]
        allowed = ", ".join(sorted(endpoints)) or "none"
        warnings.append(
            f"{vault_file}: embed_endpoint {picked!r} is not one of the user's [endpoints] "
            f"({allowed}); ignored"
        )
    layers = [user, from_vault, env, flags]
    values = {k: v for layer in layers for k, v in layer.items()}  # the last wins
    if "embed_url" not in env and "embed_url" not in flags:  # an explicit URL beats a pick
        picked_in = max((i for i, lay in enumerate(layers) if "embed_endpoint" in lay), default=0)
        _apply_endpoint(values, endpoints, {k for lay in layers[picked_in + 1 :] for k in lay})
    recalled = None
    if (
        remembered is not None
        and "embed" not in values
        and (cache_dir or _within(root, vault_file))
    ):
        recalled = remembered(Path(str(cache_dir)) if cache_dir else root / CACHE_DIRNAME)
        values.update({"embed": recalled} if recalled else {})
    return root, values, warnings, recalled is not None


def locate(vault: Path | str, overrides: Mapping[str, object] | None = None) -> VaultLocation:
    """Where ``vault``'s daemon is found, resolved as ``load_config`` resolves it (the same
    sources, checks, errors and warnings) without building a ``Config``."""
    root, values, _, _ = resolve_settings(vault, overrides)
    cache_dir, socket = values.get("cache_dir"), values.get("socket")
    return VaultLocation(
        root.resolve(),
        cache_dir if isinstance(cache_dir, Path) else None,
        socket if isinstance(socket, Path) else None,
    )


_warned_env: set[str] = set()


def _env_values(user: Mapping[str, object], endpoints: Mapping[str, Endpoint]) -> dict[str, object]:
    """Settings from ``WIKIMEM_WATCH_<FIELD>``; an unknown such variable is a typo until
    shown otherwise: one warning on stderr per process, naming the closest known name."""
    env: dict[str, object] = {}
    known = {f"WIKIMEM_WATCH_{name.upper()}": name for name in settable_fields()}
    keys = {DEFAULT_API_KEY_ENV, str(user.get("embed_api_key_env"))}
    keys.update(e.api_key_env for e in endpoints.values())  # variables that hold API keys
    for var, raw in os.environ.items():
        if not var.startswith("WIKIMEM_WATCH_"):
            continue
        name = known.get(var)
        if name is not None:
            env[name] = _trusted(name, raw, var)
        elif var not in keys and var not in _warned_env:
            _warned_env.add(var)
            import difflib

            close = difflib.get_close_matches(var, sorted(known), n=1, cutoff=0.6)
            hint = f" (did you mean {close[0]}?)" if close else ""
            print(f"wikimem-watch: warning: unknown variable {var}{hint}; ignored", file=sys.stderr)
    return env


def _trusted(name: str, value: object, source: str) -> object:
    try:
        return _coerce(name, value)
    except ValueError as exc:
        raise ConfigError(f"{source}: {exc}") from None
