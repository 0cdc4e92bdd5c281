"""``Record``: a small record over ``__slots__``, compared and shown by its fields as a
dataclass is, for the modules a client command imports.

Importing ``dataclasses`` (and the ``inspect``, ``ast`` and ``dis`` it loads) costs a
command that only talks to a running daemon about 8 ms, a fifth of its whole run, so the
records on that path (the protocol's request and response, the lock's contents, the
daemon's location) are Records; everything else uses frozen dataclasses (ADR-0012).
"""

from __future__ import annotations


class Record:
    """Subclasses name their fields in ``__slots__`` (in order) and set each in ``__init__``;
    equality and ``repr`` follow the fields. Records are not changed after ``__init__``."""

    __slots__: tuple[str, ...] = ()

    def _fields(self) -> tuple[object, ...]:
        return tuple(getattr(self, name) for name in self.__slots__)

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        assert isinstance(other, Record)
        return self._fields() == other._fields()

    def __hash__(self) -> int:
        return hash((type(self), self._fields()))

    def __repr__(self) -> str:
        shown = ", ".join(f"{n}={getattr(self, n)!r}" for n in self.__slots__)
        return f"{type(self).__name__}({shown})"
