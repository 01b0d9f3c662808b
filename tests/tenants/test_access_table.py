"""Every RPC of every service the server serves is classified read or write."""

from __future__ import annotations

from google.protobuf import descriptor_pool

from pioneer_grpc.server.app import SERVICE_NAMES
from pioneer_grpc.tenants import METHOD_ACCESS, Access


def _served_methods() -> set[str]:
    pool = descriptor_pool.Default()
    found = set()
    for name in SERVICE_NAMES:
        service = pool.FindServiceByName(name)
        found.update(f"/{service.full_name}/{method.name}" for method in service.methods)
    return found


def test_every_rpc_is_in_the_table():
    served = _served_methods()
    assert len(served) >= 20
    missing = sorted(served - set(METHOD_ACCESS))
    assert missing == [], f"classify these as read or write in pioneer_grpc/tenants/access.py: {missing}"


def test_the_table_names_only_rpcs_that_exist():
    reflection = {m for m in METHOD_ACCESS if m.startswith("/grpc.reflection.")}
    assert sorted(set(METHOD_ACCESS) - _served_methods() - reflection) == []


def test_writes_are_writes():
    for method in (
        "/pioneer.v1.HistoryService/CreateThread",
        "/pioneer.v1.HistoryService/AppendEntries",
        "/pioneer.v1.TurnService/PrepareTurn",
        "/pioneer.v1.PromptCompilerService/CompilePrompt",
    ):
        assert METHOD_ACCESS[method] is Access.WRITE
    for method in ("/pioneer.v1.HistoryService/ListThreads", "/pioneer.v1.ManifestService/WatchManifests"):
        assert METHOD_ACCESS[method] is Access.READ
