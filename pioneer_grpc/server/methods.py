"""The full method names this server serves, and the one name every other method is counted under.

Metrics, spans and access lines label a call by its method only when the server
serves it: a made-up name (any client can send one, authenticated or not) is
counted as `other`, as gRPC's own OpenTelemetry instrumentation does, so no
series, span name or cache entry is allocated per name a client invents.
"""

from __future__ import annotations

from collections.abc import Iterable

from google.protobuf import descriptor_pool

OTHER = "other"
# Longest prefix of an unknown method's name an access line keeps.
LOGGED_NAME_CHARS = 96


def method_names(service_names: Iterable[str]) -> frozenset[str]:
    """`/package.Service/Method` of every method of the named services (from the default descriptor pool)."""
    pool = descriptor_pool.Default()
    names: set[str] = set()
    for service_name in service_names:
        service = pool.FindServiceByName(service_name)
        names.update(f"/{service.full_name}/{method.name}" for method in service.methods)
    return frozenset(names)


def logged_name(method: str, known: frozenset[str]) -> str:
    """The method as an access line names it: unknown names are cut short and marked."""
    if method in known:
        return method
    return f"{OTHER}:{method[:LOGGED_NAME_CHARS]!r}"
