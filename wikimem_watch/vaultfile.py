"""Reading the vault's own ``config.toml``: untrusted input, so tolerant and bounded.

The file may come from another machine (a synced vault): it is opened without following a
symlink and without blocking, only a small regular file is read, and every problem is a
warning (``status`` shows it), never an error that stops the daemon (ADR-0010).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

MAX_VAULT_CONFIG_BYTES = 64 * 1024


def read_vault_file(path: Path) -> tuple[dict[str, object], list[str]]:
    """The vault's file as raw TOML values plus warnings; never raises, never blocks.

    Opened without following a symlink and without blocking (a FIFO planted there must
    not hang the daemon); only a regular file of at most ``MAX_VAULT_CONFIG_BYTES`` is read.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return {}, []
    except OSError as exc:
        try:
            why = "a symlink (not followed)" if path.is_symlink() else exc.strerror
        except OSError:  # its folder cannot be searched either (chmod 000 .wikimem)
            why = exc.strerror
        return {}, [f"{path}: ignored: {why}"]
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return {}, [f"{path}: ignored: not a regular file"]
        if st.st_size > MAX_VAULT_CONFIG_BYTES:
            return {}, [f"{path}: ignored: {st.st_size} bytes (at most {MAX_VAULT_CONFIG_BYTES})"]
        raw = os.read(fd, MAX_VAULT_CONFIG_BYTES + 1)
    except OSError as exc:
        return {}, [f"{path}: ignored: {exc.strerror}"]
    finally:
        os.close(fd)
    import tomllib

    try:
        return tomllib.loads(raw.decode("utf-8")), []
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        return {}, [f"{path}: ignored: {exc}"]
