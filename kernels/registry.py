"""The one registry pattern of every extension kind (engines, perturbation types, term types,
plugins, player kinds): a name -> entry table read when called.

Each kind keeps one :class:`Registry` per side (the kernel's entries here in ``kernels/``, the
config's models in ``bdpd_jax/config/``) and one public ``register_*`` call that fills both. A
registry is ordered: an entry's int code is its position, so entries are appended and only the
last may be removed (compiled programs key on the names). Plain Python, no JAX: kernels and the
host share it without importing each other.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Generic, TypeVar

T = TypeVar("T")


class Registry(Mapping[str, T], Generic[T]):
    """Ordered name -> entry table of one extension kind. ``field`` is the config/wire field
    that names an entry (``engineMode``, ``termType``...): every error names it and the known
    names. Read-only as a mapping (``reg[name]``, ``name in reg``, iteration in code order)."""

    def __init__(self, field: str, what: str) -> None:
        self.field = field  # the field an error names, e.g. "model.engineMode"
        self.what = what  # what an entry is, e.g. "engine"
        self._entries: dict[str, T] = {}

    def register(self, name: str, entry: T, *, replace: bool = False) -> T:
        """Append ``entry`` under ``name``; a second registration of a name is refused unless
        ``replace`` (which keeps the name's code)."""
        if not isinstance(name, str) or not name:
            raise ValueError(f"{self.field}: a {self.what} name is a non-empty string, got {name!r:.80}")
        if name in self._entries and not replace:
            raise ValueError(f"{self.field}: {self.what} {name!r} is already registered")
        self._entries[name] = entry
        return entry

    def unregister(self, name: str) -> None:
        """Remove the last registered entry (tests that register one must leave the registry as
        they found it); any other is refused so the codes of the rest never change."""
        names = self.names()
        if not names or names[-1] != name:
            last = names[-1] if names else None
            raise ValueError(
                f"{self.field}: only the last registered {self.what} ({last!r}) can be unregistered, got {name!r}"
            )
        del self._entries[name]

    def get_entry(self, name: str) -> T:
        """The entry of ``name``; ValueError naming the field, the value and the known names."""
        try:
            return self._entries[name]
        except (KeyError, TypeError):
            raise ValueError(f"{self.field}: unknown {self.what} {name!r:.80}; known: {list(self._entries)}") from None

    def names(self) -> tuple[str, ...]:
        """The registered names in code order."""
        return tuple(self._entries)

    def code(self, name: str) -> int:
        """The int code (position) of ``name``; ValueError naming the field when unknown."""
        self.get_entry(name)
        return self.names().index(name)

    def by_code(self, code: int) -> T:
        """The entry of int ``code``; ValueError naming the field when out of range."""
        names = self.names()
        if not 0 <= int(code) < len(names):
            raise ValueError(f"{self.field}: unknown {self.what} code {code!r:.80}; known: 0..{len(names) - 1}")
        return self._entries[names[int(code)]]

    def lookup(self, name_or_code: str | int) -> T:
        """The entry of a name or an int code."""
        return self.get_entry(name_or_code) if isinstance(name_or_code, str) else self.by_code(name_or_code)

    def __getitem__(self, name: str) -> T:
        return self._entries[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self._entries)

    def __repr__(self) -> str:
        return f"Registry({self.what}: {list(self._entries)})"


__all__ = ["Registry"]
