"""The request counter is labelled with the tenant the call's token names, on both edges: the tenants
file's names, never a name an admin's call sent (so the labels stay as many as the file's tenants)."""

from __future__ import annotations

import httpx

from pioneer_grpc.tenants import TENANT_HEADER
from pioneer_grpc.v1 import history_service_pb2, history_service_pb2_grpc
from tests.telemetry.test_metrics import scrape, value
from tests.tenants.files import ADMIN, AGENT, OTHER_AGENT, write_tenants
from tests.web import connect_http as http

LISTED = {"grpc_service": "pioneer.v1.HistoryService", "grpc_method": "ListThreads", "grpc_code": "OK"}


async def test_the_counter_names_the_tokens_tenant(server_factory, tmp_path):
    path = write_tenants(tmp_path / "tenants.toml")
    handle = await server_factory(http_listen="127.0.0.1:0", tenants_file=path, metrics_listen="127.0.0.1:0")
    stub = history_service_pb2_grpc.HistoryServiceStub(handle.channel())
    request = history_service_pb2.ListThreadsRequest()
    for token, tenant in ((AGENT, ""), (OTHER_AGENT, ""), (ADMIN, "acme"), (ADMIN, "made-up-1")):
        metadata = [("authorization", f"Bearer {token}")] + ([(TENANT_HEADER, tenant)] if tenant else [])
        await stub.ListThreads(request, metadata=metadata)
    async with httpx.AsyncClient(base_url=f"http://{handle.running.http_address}", timeout=30) as client:
        assert (
            await http.unary(client, "/pioneer.v1.HistoryService/ListThreads", {}, AGENT)
        ).status_code == 200
    _, samples = await scrape(handle.running.metrics_address)
    assert value(samples, "grpc_server_handled_total", **LISTED, tenant="acme") == 2
    assert value(samples, "grpc_server_handled_total", **LISTED, tenant="zeta") == 1
    assert value(samples, "grpc_server_handled_total", **LISTED, tenant="ops") == 2
    tenants = {
        dict(labels).get("tenant") for (name, labels) in samples if name == "grpc_server_handled_total"
    }
    assert tenants <= {"acme", "zeta", "ops", ""}
