"""Counting what a use case asks of the store: each call of a port method (`concern.method`)."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any, TypeVar

S = TypeVar("S")


class Crossings:
    """Every call a use case makes into the store (`concern.method`), in order."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def clear(self) -> None:
        self.calls.clear()


def counted(store: S, crossings: Crossings) -> S:
    """`store` (any implementation of the port) with each method of each concern counted as the
    use cases call it."""
    for concern in (
        "threads",
        "entries",
        "turns",
        "history",
        "rounds",
        "manifests",
        "listing",
        "rendered",
        "usage",
        "copies",
        "retention",
    ):
        part = getattr(store, concern)
        for name in dir(type(part)):
            if name.startswith("_") or not inspect.isfunction(getattr(type(part), name)):
                continue
            setattr(part, name, _counting(getattr(part, name), f"{concern}.{name}", crossings))
    return store


def _counting(method: Callable[..., Any], name: str, crossings: Crossings) -> Callable[..., Any]:
    def call(*args: Any, **kwargs: Any) -> Any:
        crossings.calls.append(name)
        return method(*args, **kwargs)

    return call
