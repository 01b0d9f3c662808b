"""A tenant's caps on threads and stored bytes (tenants file), on both edges and both databases:
past one, RESOURCE_EXHAUSTED with TENANT_QUOTA_EXCEEDED, a QuotaFailure and the numbers; other
tenants are not held back."""

from __future__ import annotations

import base64

import grpc
import httpx
import pytest
from google.rpc import error_details_pb2
from grpc_status import rpc_status

from pioneer_grpc import reasons
from pioneer_grpc.client import user_entry
from pioneer_grpc.tenants import Quota, parse_tenants
from pioneer_grpc.tenants.tenants_file import TenantsError
from pioneer_grpc.v1 import history_service_pb2, history_service_pb2_grpc
from tests.support import decoded
from tests.tenants.files import AGENT, OTHER_AGENT, tenants_toml, write_tenants
from tests.web import connect_http as http

H = "/pioneer.v1.HistoryService"
CAPS = "[tenant.zeta]\nmax_threads = 2\nmax_stored_bytes = 100\n"


def test_caps_are_read_from_the_file_and_checked():
    tenants = parse_tenants(tenants_toml(limits=CAPS))
    assert tenants.quotas == {"zeta": Quota(2, 100)} and "zeta" not in tenants.limits
    both = parse_tenants(tenants_toml(limits="[tenant.zeta]\nrequests_per_second = 5\nmax_threads = 3\n"))
    assert both.quotas["zeta"] == Quota(3, None) and both.limits["zeta"].requests_per_second == 5
    with pytest.raises(TenantsError) as refused:
        parse_tenants(tenants_toml(limits="[tenant.zeta]\nmax_threads = 0\nmax_stored_bytes = 1.5\n"))
    assert "max_threads must be a whole number of at least 1, got 0" in str(refused.value)
    assert "max_stored_bytes must be a whole number of at least 1, got 1.5" in str(refused.value)


@pytest.fixture
async def served(database_url, server_factory, tmp_path):
    path = write_tenants(tmp_path / "tenants.toml", tenants_toml(limits=CAPS))
    handle = await server_factory(database_url=database_url, http_listen="127.0.0.1:0", tenants_file=path)
    async with httpx.AsyncClient(base_url=f"http://{handle.running.http_address}", timeout=30) as client:
        yield handle, client


def _quota_failure(err: grpc.aio.AioRpcError) -> error_details_pb2.QuotaFailure:
    status = rpc_status.from_call(err)
    assert status is not None
    for detail in status.details:
        if detail.Is(error_details_pb2.QuotaFailure.DESCRIPTOR):
            found = error_details_pb2.QuotaFailure()
            detail.Unpack(found)
            return found
    raise AssertionError("no QuotaFailure")


async def test_the_thread_cap(served):
    handle, client = served
    stub = history_service_pb2_grpc.HistoryServiceStub(handle.channel())
    zeta = (("authorization", f"Bearer {OTHER_AGENT}"),)
    for thread in ("z1", "z2"):
        await stub.CreateThread(history_service_pb2.CreateThreadRequest(thread_id=thread), metadata=zeta)
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await stub.CreateThread(history_service_pb2.CreateThreadRequest(thread_id="z3"), metadata=zeta)
    failure = decoded(err.value)
    assert (failure.code, failure.reason) == (
        grpc.StatusCode.RESOURCE_EXHAUSTED,
        reasons.TENANT_QUOTA_EXCEEDED,
    )
    assert failure.metadata == {"tenant": "zeta", "quota": "max_threads", "limit": "2", "used": "2"}
    violation = _quota_failure(err.value).violations[0]
    assert (violation.subject, violation.description) == ("tenant:zeta", "threads: 2 held, cap 2")
    # A retried create of a thread it holds still answers; another tenant is not held back.
    await stub.CreateThread(history_service_pb2.CreateThreadRequest(thread_id="z1"), metadata=zeta)
    for thread in ("a1", "a2", "a3"):
        await stub.CreateThread(
            history_service_pb2.CreateThreadRequest(thread_id=thread),
            metadata=(("authorization", f"Bearer {AGENT}"),),
        )
    # The same on HTTP: 429, the same reason and QuotaFailure.
    response = await http.unary(client, f"{H}/CreateThread", {"threadId": "z4"}, OTHER_AGENT)
    assert response.status_code == 429
    body = response.json()
    assert http.reasons(body) == [reasons.TENANT_QUOTA_EXCEEDED]
    quota = next(d for d in body["details"] if d["type"] == "google.rpc.QuotaFailure")
    value = quota["value"] + "=" * (-len(quota["value"]) % 4)
    decoded_http = error_details_pb2.QuotaFailure.FromString(base64.b64decode(value))
    assert decoded_http.violations[0].description == "threads: 2 held, cap 2"
    # Deleting one makes room.
    await stub.DeleteThread(history_service_pb2.DeleteThreadRequest(thread_id="z2"), metadata=zeta)
    await stub.CreateThread(history_service_pb2.CreateThreadRequest(thread_id="z3"), metadata=zeta)


async def test_the_stored_bytes_cap(served):
    handle, _ = served
    stub = history_service_pb2_grpc.HistoryServiceStub(handle.channel())
    zeta = (("authorization", f"Bearer {OTHER_AGENT}"),)
    await stub.CreateThread(history_service_pb2.CreateThreadRequest(thread_id="z1"), metadata=zeta)
    # An entry's stored bytes: its content, and its tool calls as stored ("[]": 2 bytes).
    sixty = "x" * 60
    await stub.AppendEntries(
        history_service_pb2.AppendEntriesRequest(
            thread_id="z1", entries=[user_entry("e1", sixty, turn_id="u1")]
        ),
        metadata=zeta,
    )
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await stub.AppendEntries(
            history_service_pb2.AppendEntriesRequest(
                thread_id="z1", entries=[user_entry("e2", sixty, turn_id="u1")]
            ),
            metadata=zeta,
        )
    failure = decoded(err.value)
    assert failure.reason == reasons.TENANT_QUOTA_EXCEEDED
    assert failure.metadata == {
        "tenant": "zeta",
        "quota": "max_stored_bytes",
        "limit": "100",
        "used": "62",
        "requested": "62",
    }
    assert _quota_failure(err.value).violations[0].description == (
        "stored bytes: 62 held, 62 more asked, cap 100"
    )
    # Nothing of the refused batch was stored; 38 bytes still fit.
    listed = await stub.ListEntries(history_service_pb2.ListEntriesRequest(thread_id="z1"), metadata=zeta)
    assert [e.entry_id for e in listed.entries] == ["e1"]
    await stub.AppendEntries(
        history_service_pb2.AppendEntriesRequest(
            thread_id="z1", entries=[user_entry("e3", "y" * 36, turn_id="u1")]
        ),
        metadata=zeta,
    )


async def _refused(call) -> dict[str, str]:
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await call
    failure = decoded(err.value)
    assert (failure.code, failure.reason) == (
        grpc.StatusCode.RESOURCE_EXHAUSTED,
        reasons.TENANT_QUOTA_EXCEEDED,
    )
    assert _quota_failure(err.value).violations[0].subject == "tenant:zeta"
    return dict(failure.metadata)


async def test_a_fork_and_an_import_are_held_to_the_caps(served):
    """ForkThread and ImportThread make threads and bytes: at either cap they are refused with the
    numbers, and write nothing."""
    handle, _ = served
    stub = history_service_pb2_grpc.HistoryServiceStub(handle.channel())
    zeta = (("authorization", f"Bearer {OTHER_AGENT}"),)
    await stub.CreateThread(history_service_pb2.CreateThreadRequest(thread_id="z1"), metadata=zeta)

    async def turn(turn_id: str, entry_id: str, content: str) -> None:
        await stub.CompleteTurn(
            history_service_pb2.CompleteTurnRequest(
                thread_id="z1", turn_id=turn_id, entries=[user_entry(entry_id, content, turn_id=turn_id)]
            ),
            metadata=zeta,
        )

    def fork(turn_id: str, target: str):
        request = history_service_pb2.ForkThreadRequest(
            source_thread_id="z1", source_turn_id=turn_id, thread_id=target
        )
        return stub.ForkThread(request, metadata=zeta)

    def imported(target: str, stream: bytes):
        return stub.ImportThread(
            iter([history_service_pb2.ImportThreadRequest(thread_id=target, chunk=stream)]), metadata=zeta
        )

    await turn("u1", "e1", "x" * 30)  # 32 stored bytes
    # Under both caps a fork is made: 2 threads, 64 bytes.
    assert (await fork("u1", "z2")).thread.entry_count == 1
    at_thread_cap = {"tenant": "zeta", "quota": "max_threads", "limit": "2", "used": "2"}
    assert await _refused(fork("u1", "z3")) == at_thread_cap
    stream = b"".join(
        [
            r.chunk
            async for r in stub.ExportThread(
                history_service_pb2.ExportThreadRequest(thread_id="z1"), metadata=zeta
            )
        ]
    )
    assert await _refused(imported("z3", stream)) == at_thread_cap

    # Room for a thread, not for its bytes: 74 held, a copy of z1 adds 74 (or 32 up to u1).
    await stub.DeleteThread(history_service_pb2.DeleteThreadRequest(thread_id="z2"), metadata=zeta)
    await turn("u2", "e2", "y" * 40)
    stream = b"".join(
        [
            r.chunk
            async for r in stub.ExportThread(
                history_service_pb2.ExportThreadRequest(thread_id="z1"), metadata=zeta
            )
        ]
    )
    at_byte_cap = {"tenant": "zeta", "quota": "max_stored_bytes", "limit": "100", "used": "74"}
    assert await _refused(fork("u2", "z3")) == {**at_byte_cap, "requested": "74"}
    assert await _refused(fork("u1", "z3")) == {**at_byte_cap, "requested": "32"}
    assert await _refused(imported("z3", stream)) == {**at_byte_cap, "requested": "74"}

    # Nothing was written: z1 alone, as it was.
    listed = await stub.ListThreads(history_service_pb2.ListThreadsRequest(), metadata=zeta)
    assert [(t.thread_id, t.entry_count) for t in listed.threads] == [("z1", 2)]
    # Another tenant is not held back by zeta's caps.
    agent = (("authorization", f"Bearer {AGENT}"),)
    imported_elsewhere = await stub.ImportThread(
        iter([history_service_pb2.ImportThreadRequest(thread_id="z3", chunk=stream)]), metadata=agent
    )
    assert imported_elsewhere.thread.entry_count == 2
