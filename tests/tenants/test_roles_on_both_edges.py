"""Each role on a read and a write RPC, an unknown token, and the tenant's rate, over gRPC and HTTP.

A real server with a tenants file and the HTTP listener on loopback; the same
calls over both edges answer the same codes and details.
"""

from __future__ import annotations

import base64
import itertools
import logging
import math
from dataclasses import dataclass

import grpc
import httpx
import pytest
from google.rpc import error_details_pb2
from grpc_status import rpc_status

from pioneer_grpc import reasons
from pioneer_grpc.tenants import CALLER, Caller, Role, current_caller
from pioneer_grpc.v1 import history_service_pb2, history_service_pb2_grpc
from tests.support import decoded
from tests.tenants.files import ADMIN, AGENT, OTHER_AGENT, VIEWER, tenants_toml, write_tenants
from tests.web import connect_http as http

HISTORY = "/pioneer.v1.HistoryService"
# zeta: two calls at once, then one every 1,000 s: the test counts calls, it never waits.
TINY_BUCKET = "[tenant.zeta]\nrequests_per_second = 0.001\nburst = 2\n"
_ids = itertools.count()


@dataclass
class Answer:
    """A call's outcome as both edges are compared: the gRPC code name and the ErrorInfo reason."""

    code: str
    reason: str = ""


@pytest.fixture
async def served(server_factory, tmp_path):
    path = write_tenants(tmp_path / "tenants.toml", tenants_toml(limits=TINY_BUCKET))
    handle = await server_factory(http_listen="127.0.0.1:0", tenants_file=path)
    async with httpx.AsyncClient(base_url=f"http://{handle.running.http_address}", timeout=30) as client:
        yield handle, client


def _request(write: bool):
    if write:
        return "CreateThread", history_service_pb2.CreateThreadRequest(thread_id=f"thr_{next(_ids)}")
    return "ListThreads", history_service_pb2.ListThreadsRequest(page_size=5)


async def _over_grpc(handle, token: str, write: bool, channel: grpc.aio.Channel | None = None) -> Answer:
    method, request = _request(write)
    stub = history_service_pb2_grpc.HistoryServiceStub(channel or handle.channel())
    try:
        await getattr(stub, method)(request, metadata=(("authorization", f"Bearer {token}"),))
    except grpc.aio.AioRpcError as err:
        failure = decoded(err)
        return Answer(failure.code.name, failure.reason)
    return Answer("OK")


async def _over_http(client, token: str, write: bool) -> Answer:
    method, request = _request(write)
    response = await http.unary(client, f"{HISTORY}/{method}", request, token)
    if response.status_code == 200:
        return Answer("OK")
    body = response.json()
    found = http.reasons(body)
    return Answer(body["code"].upper(), found[0] if found else "")


DENIED = Answer("PERMISSION_DENIED", reasons.ROLE_MAY_NOT_WRITE)
UNKNOWN = Answer("UNAUTHENTICATED")


@pytest.mark.parametrize("edge", ["grpc", "http"])
@pytest.mark.parametrize(
    ("token", "read", "write"),
    [
        (AGENT, Answer("OK"), Answer("OK")),
        (VIEWER, Answer("OK"), DENIED),
        (ADMIN, Answer("OK"), Answer("OK")),
        ("a-token-nobody-was-given", UNKNOWN, UNKNOWN),
    ],
    ids=["agent", "viewer", "admin", "unknown"],
)
async def test_each_role_on_a_read_and_a_write(served, edge, token, read, write):
    handle, client = served

    async def call(write_call: bool) -> Answer:
        if edge == "grpc":
            return await _over_grpc(handle, token, write_call)
        return await _over_http(client, token, write_call)

    assert await call(False) == read
    assert await call(True) == write


async def test_a_viewer_s_write_names_the_role_and_the_method_on_both_edges(served):
    handle, client = served
    stub = history_service_pb2_grpc.HistoryServiceStub(handle.channel())
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await stub.CreateThread(
            history_service_pb2.CreateThreadRequest(thread_id="thr_v"),
            metadata=(("authorization", f"Bearer {VIEWER}"),),
        )
    failure = decoded(err.value)
    assert failure.metadata == {"role": "viewer", "tenant": "acme", "method": f"{HISTORY}/CreateThread"}
    assert "may only read" in failure.message
    response = await http.unary(client, f"{HISTORY}/CreateThread", {"threadId": "thr_v"}, VIEWER)
    assert response.status_code == 403
    assert response.json()["message"] == failure.message
    # Nothing was written: the agent finds no such thread.
    answer = await http.unary(client, f"{HISTORY}/GetThread", {"threadId": "thr_v"}, AGENT)
    assert answer.status_code == 404


def _retry_info_of_grpc(err: grpc.aio.AioRpcError) -> error_details_pb2.RetryInfo:
    status = rpc_status.from_call(err)
    assert status is not None
    for detail in status.details:
        if detail.Is(error_details_pb2.RetryInfo.DESCRIPTOR):
            info = error_details_pb2.RetryInfo()
            detail.Unpack(info)
            return info
    raise AssertionError("no RetryInfo")


def _retry_info_of_http(body: dict) -> error_details_pb2.RetryInfo:
    for detail in body.get("details", []):
        if detail["type"] == "google.rpc.RetryInfo":
            value = detail["value"] + "=" * (-len(detail["value"]) % 4)
            return error_details_pb2.RetryInfo.FromString(base64.b64decode(value))
    raise AssertionError(f"no RetryInfo in {body}")


async def test_the_tenant_s_rate_is_shared_by_both_edges_and_answers_retry_info(served):
    handle, client = served
    # The burst of two: one call on each edge.
    assert await _over_grpc(handle, OTHER_AGENT, False) == Answer("OK")
    assert await _over_http(client, OTHER_AGENT, False) == Answer("OK")

    stub = history_service_pb2_grpc.HistoryServiceStub(handle.channel())
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await stub.ListThreads(
            history_service_pb2.ListThreadsRequest(), metadata=(("authorization", f"Bearer {OTHER_AGENT}"),)
        )
    failure = decoded(err.value)
    assert (failure.code, failure.reason) == (grpc.StatusCode.RESOURCE_EXHAUSTED, reasons.TENANT_RATE_LIMITED)
    assert failure.metadata["tenant"] == "zeta"
    assert (failure.metadata["requests_per_second"], failure.metadata["burst"]) == ("0.001", "2")
    delay = _retry_info_of_grpc(err.value).retry_delay.ToTimedelta().total_seconds()
    # Most of a token's 1,000 s: only the test's own few seconds have refilled it.
    assert 900 < delay <= 1000

    response = await http.unary(client, f"{HISTORY}/ListThreads", {}, OTHER_AGENT)
    assert response.status_code == 429
    body = response.json()
    assert body["code"] == "resource_exhausted"
    assert http.reasons(body) == [reasons.TENANT_RATE_LIMITED]
    http_delay = _retry_info_of_http(body).retry_delay.ToTimedelta().total_seconds()
    assert 900 < http_delay <= 1000
    assert int(response.headers["retry-after"]) == math.ceil(http_delay)

    # Another tenant is not held back.
    assert await _over_grpc(handle, AGENT, False) == Answer("OK")
    assert await _over_http(client, AGENT, True) == Answer("OK")


async def test_the_caller_is_on_the_call_s_access_line_and_in_its_context(served, caplog):
    handle, client = served
    caplog.set_level(logging.INFO, logger="pioneer_grpc.access")
    channel = handle.channel()
    await _over_grpc(handle, AGENT, False, channel)
    await _over_http(client, ADMIN, False)
    # On the connections the calls before used: nothing of their caller stays with the connection.
    await _over_grpc(handle, "a-token-nobody-was-given", False, channel)
    await _over_http(client, "a-token-nobody-was-given", False)
    tenants = [
        (getattr(r, "tenant", None), "protocol=connect" in r.getMessage())
        for r in caplog.records
        if r.name == "pioneer_grpc.access" and "ListThreads" in r.getMessage()
    ]
    assert tenants == [("acme", False), ("ops", True), (None, False), (None, True)]
    # Outside a call: the open caller, as a server without tokens serves everyone.
    assert CALLER.get() is None
    assert current_caller() == Caller("default", Role.AGENT)


async def test_a_server_with_only_token_serves_it_as_the_default_agent(server_factory, caplog):
    handle = await server_factory(token="s3cret")
    caplog.set_level(logging.INFO, logger="pioneer_grpc.access")
    assert await _over_grpc(handle, "s3cret", True) == Answer("OK")
    assert await _over_grpc(handle, "other", False) == UNKNOWN
    assert [getattr(r, "tenant", None) for r in caplog.records if "CreateThread" in r.getMessage()] == [
        "default"
    ]
