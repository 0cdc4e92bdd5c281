"""wikimem-watch: a live hybrid index over a Markdown memory vault."""

from __future__ import annotations

__version__ = "0.1.0"
