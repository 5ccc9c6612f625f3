"""A small named registry: every plug point (backend, executor, tool, fault, agent, suite) is a
protocol plus one of these, so a new implementation is a new entry, not a new branch.

Entries may be objects or ``"module:attribute"`` strings, imported on first use, so that heavy
implementations (Docker, Ray) cost nothing until someone asks for them.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class UnknownName(KeyError):
    def __str__(self) -> str:  # KeyError quotes its argument; a message should read as one
        return str(self.args[0])


class Registry(Generic[T]):
    def __init__(self, what: str) -> None:
        self.what = what
        self._entries: dict[str, T | str] = {}

    def add(self, name: str, entry: T | str) -> None:
        self._entries[name] = entry

    def register(self, name: str) -> Callable[[T], T]:
        def deco(obj: T) -> T:
            self._entries[name] = obj
            return obj
        return deco

    def get(self, name: str) -> T:
        if name not in self._entries:
            raise UnknownName(f"unknown {self.what} {name!r}; known: {', '.join(self.names())}")
        entry = self._entries[name]
        if isinstance(entry, str):
            module, _, attr = entry.partition(":")
            entry = getattr(importlib.import_module(module), attr)
            self._entries[name] = entry
        return entry

    def names(self) -> list[str]:
        return list(self._entries)

    def __contains__(self, name: str) -> bool:
        return name in self._entries
