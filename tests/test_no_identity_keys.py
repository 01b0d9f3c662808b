"""No cache is keyed by an object's identity: `id(x)` names memory that a freed object gives back,
so an answer kept for one object would be found for another made in its place
(tests/models/test_registry_key.py shows it). Caches are keyed by value, or owned by the object
they cache for; the package calls `id()` nowhere."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "pioneer_grpc"


def identity_calls(source: str) -> list[int]:
    """The lines of `source` that call the builtin `id`."""
    return [
        node.lineno
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "id"
    ]


def test_the_finder_finds_an_identity_key() -> None:
    assert identity_calls("key = (id(registry), len(body))\n") == [1]
    assert identity_calls("key = (registry.key, len(body))\nthread_id(x)\n") == []


def test_the_package_keys_nothing_by_identity() -> None:
    found = {
        str(path.relative_to(PACKAGE)): lines
        for path in sorted(PACKAGE.rglob("*.py"))
        if (lines := identity_calls(path.read_text()))
    }
    assert found == {}
