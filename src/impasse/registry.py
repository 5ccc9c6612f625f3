"""A small named registry: every plug point (backend, executor, tool, fault, agent, suite) is a
protocol plus one of these, so a new implementation is a new entry, not a new branch.

Entries may be objects or ``"module:attribute"`` strings, imported on first use, so that heavy
implementations (Docker, Ray) cost nothing until someone asks for them. A registry may also name
an entry-point group (``[project.entry-points."<group>"]`` in a package's metadata): its entries
join the registry on first lookup, so a module registers itself from its own package and the
registry's module never imports it (no upward import; a plug-in package needs no edit here).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from importlib import metadata
from typing import Generic, TypeVar

T = TypeVar("T")


class UnknownName(KeyError):
    def __str__(self) -> str:  # KeyError quotes its argument; a message should read as one
        return str(self.args[0])


class Registry(Generic[T]):
    def __init__(self, what: str, entry_points: str | None = None) -> None:
        self.what = what
        self._entries: dict[str, T | str] = {}
        self._group = entry_points

    def add(self, name: str, entry: T | str) -> None:
        self._entries[name] = entry

    def register(self, name: str) -> Callable[[T], T]:
        def deco(obj: T) -> T:
            self._entries[name] = obj
            return obj
        return deco

    def _discover(self) -> None:
        """Entries declared by installed packages under the registry's entry-point group (once)."""
        if self._group is None:
            return
        group, self._group = self._group, None
        for ep in metadata.entry_points(group=group):
            self._entries.setdefault(ep.name, ep.value)

    def get(self, name: str) -> T:
        if name not in self._entries:
            self._discover()
        if name not in self._entries:
            raise UnknownName(f"unknown {self.what} {name!r}; known: {', '.join(self.names())}")
        entry = self._entries[name]
        if isinstance(entry, str):
            module, _, attr = entry.partition(":")
            entry = getattr(importlib.import_module(module), attr)
            self._entries[name] = entry
        return entry

    def names(self) -> list[str]:
        self._discover()
        return list(self._entries)

    def __contains__(self, name: str) -> bool:
        if name not in self._entries:
            self._discover()
        return name in self._entries
