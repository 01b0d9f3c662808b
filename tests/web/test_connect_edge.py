"""The contract over HTTP/JSON (Connect): the same answers, errors, auth and ids as gRPC."""

from __future__ import annotations

import asyncio

import grpc
import httpx
import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from pioneer_grpc.v1 import (
    history_pb2,
    history_service_pb2,
    history_service_pb2_grpc,
    prompt_compiler_service_pb2,
    prompt_compiler_service_pb2_grpc,
    prompt_pb2,
    turn_service_pb2,
    turn_service_pb2_grpc,
)
from tests.support import decoded
from tests.web import connect_http as http
from tests.web.rounds import prepare_request

TOKEN = "s3cret"
HISTORY = "/pioneer.v1.HistoryService"


@pytest.fixture
async def edge(server_factory):
    handle = await server_factory(http_listen="127.0.0.1:0", token=TOKEN)
    async with httpx.AsyncClient(base_url=f"http://{handle.running.http_address}", timeout=30) as client:
        yield handle, client


async def test_compile_and_prepare_answer_as_over_grpc(edge):
    handle, client = edge
    channel = handle.channel()
    metadata = handle.metadata()
    compile_request = prompt_compiler_service_pb2.CompilePromptRequest(
        input=prompt_pb2.PromptCompileInput(
            profile=prompt_pb2.PROMPT_PROFILE_FULL, extra_system="Date: today"
        )
    )
    over_grpc = await prompt_compiler_service_pb2_grpc.PromptCompilerServiceStub(channel).CompilePrompt(
        compile_request, metadata=metadata
    )
    response = await http.unary(
        client, "/pioneer.v1.PromptCompilerService/CompilePrompt", compile_request, TOKEN
    )
    over_http = http.parsed(response, prompt_compiler_service_pb2.CompilePromptResponse())
    assert over_http == over_grpc
    assert over_http.payload.manifest.fingerprint_stable

    history = history_service_pb2_grpc.HistoryServiceStub(channel)
    await history.CreateThread(
        history_service_pb2.CreateThreadRequest(
            thread_id="t", config=history_pb2.ThreadConfig(model="claude-sonnet-4-5")
        ),
        metadata=metadata,
    )
    request = prepare_request("t", "turn-1", "Oslo?")
    over_grpc_turn = await turn_service_pb2_grpc.TurnServiceStub(channel).PrepareTurn(
        request, metadata=metadata
    )
    # The same round again (a retry): the same answer, over HTTP.
    response = await http.unary(client, "/pioneer.v1.TurnService/PrepareTurn", request, TOKEN)
    over_http_turn = http.parsed(response, turn_service_pb2.PrepareTurnResponse())
    assert over_http_turn == over_grpc_turn
    assert over_http_turn.provider_body_json


async def test_errors_carry_the_grpc_reasons(edge):
    handle, client = edge
    history = history_service_pb2_grpc.HistoryServiceStub(handle.channel())
    for path, request in [
        ("GetThread", history_service_pb2.GetThreadRequest(thread_id="missing")),
        ("ListThreads", history_service_pb2.ListThreadsRequest(page_token="not-a-token")),
        ("ListThreads", history_service_pb2.ListThreadsRequest(order_by="name")),
    ]:
        with pytest.raises(grpc.aio.AioRpcError) as raised:
            await getattr(history, path)(request, metadata=handle.metadata())
        response = await http.unary(client, f"{HISTORY}/{path}", request, TOKEN)
        error = response.json()
        assert error["code"] == raised.value.code().name.lower()
        assert error["message"] == raised.value.details()
        assert http.reasons(error) == [decoded(raised.value).reason]
        assert response.status_code in (400, 404)
    malformed = await client.post(f"{HISTORY}/GetThread", content=b"{nope", headers=http.headers(TOKEN))
    assert malformed.status_code == 400
    assert http.reasons(malformed.json()) == ["MALFORMED_REQUEST"]


async def test_token_and_request_id(edge):
    _handle, client = edge
    request = {"pageSize": 5}
    missing = await http.unary(client, f"{HISTORY}/ListThreads", request)
    wrong = await http.unary(client, f"{HISTORY}/ListThreads", request, "guess")
    assert (missing.status_code, missing.json()["code"]) == (401, "unauthenticated")
    assert (wrong.status_code, wrong.json()["message"]) == (401, "invalid bearer token")
    ok = await http.unary(client, f"{HISTORY}/ListThreads", request, TOKEN, **{"x-request-id": "req-42"})
    assert ok.status_code == 200
    assert ok.headers["x-request-id"] == "req-42"
    assert len(missing.headers["x-request-id"]) == 32
    # Nor a stream.
    refused = await client.post(
        "/pioneer.v1.ManifestService/WatchManifests",
        content=http.envelope({}),
        headers={"content-type": "application/connect+json"},
    )
    assert refused.status_code == 200  # a stream's error travels in its end message
    assert b'"unauthenticated"' in refused.content
    assert b'"event"' not in refused.content
    # The page itself holds no data; a wrong method is refused.
    page = await client.get("/")
    assert page.status_code == 200
    assert "text/html" in page.headers["content-type"]
    assert (await client.get("/nothing-here")).status_code == 404


async def test_threads_newest_first_in_pages(edge):
    handle, client = edge
    history = history_service_pb2_grpc.HistoryServiceStub(handle.channel())
    for name in ["b", "a", "c", "e", "d"]:
        await history.CreateThread(
            history_service_pb2.CreateThreadRequest(thread_id=name), metadata=handle.metadata()
        )
    seen, token = [], ""
    while True:
        response = await http.unary(
            client,
            f"{HISTORY}/ListThreads",
            {"pageSize": 2, "orderBy": "create_time desc", "pageToken": token},
            TOKEN,
        )
        page = http.parsed(response, history_service_pb2.ListThreadsResponse())
        seen += [t.thread_id for t in page.threads]
        token = page.next_page_token
        if not token:
            break
    assert seen == ["d", "e", "c", "a", "b"]
    by_id = await http.unary(client, f"{HISTORY}/ListThreads", {}, TOKEN)
    assert [t["threadId"] for t in by_id.json()["threads"]] == ["a", "b", "c", "d", "e"]


async def test_watch_manifests_streams_live_events(edge):
    handle, client = edge
    compiler = prompt_compiler_service_pb2_grpc.PromptCompilerServiceStub(handle.channel())
    history = history_service_pb2_grpc.HistoryServiceStub(handle.channel())
    await history.CreateThread(
        history_service_pb2.CreateThreadRequest(thread_id="w"), metadata=handle.metadata()
    )
    events = http.stream(client, "/pioneer.v1.ManifestService/WatchManifests", {"threadId": "w"}, TOKEN)
    compiled = asyncio.Event()

    async def compile_when_watched() -> None:
        await compiled.wait()
        await compiler.CompilePrompt(
            prompt_compiler_service_pb2.CompilePromptRequest(
                input=prompt_pb2.PromptCompileInput(profile=prompt_pb2.PROMPT_PROFILE_FULL),
                thread_id="w",
                turn_id="t1",
            ),
            metadata=handle.metadata(),
        )

    task = asyncio.create_task(compile_when_watched())
    try:
        compiled.set()
        async for flags, message in events:
            assert not flags & http.END_STREAM, message
            if "event" in message:
                event = message["event"]
                assert (event["threadId"], event["turnId"]) == ("w", "t1")
                assert event["manifest"]["fingerprintStable"]
                break
    finally:
        await events.aclose()
        await task


async def test_off_by_default(server):
    assert server.running.http is None
    assert server.running.http_address == ""


async def test_metrics_and_spans_as_for_grpc(server_factory, monkeypatch):
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    import tests.conftest as shared

    original = shared.start_server
    monkeypatch.setattr(shared, "start_server", lambda config: original(config, tracer_provider=provider))
    handle = await server_factory(http_listen="127.0.0.1:0", metrics_listen="127.0.0.1:0")
    trace_id = "0af7651916cd43dd8448eb211c80319c"
    async with httpx.AsyncClient(base_url=f"http://{handle.running.http_address}", timeout=30) as client:
        parent = {"traceparent": f"00-{trace_id}-b7ad6b7169203331-01"}
        found = await http.unary(client, f"{HISTORY}/GetThread", {"threadId": "nope"}, **parent)
        assert found.status_code == 404
        metrics = (await client.get(f"http://{handle.running.metrics_address}/metrics")).text
    sample = (
        'grpc_server_handled_total{grpc_code="NOT_FOUND",grpc_method="GetThread",'
        'grpc_service="pioneer.v1.HistoryService",tenant=""} 1.0'
    )
    assert sample in metrics
    spans = [s for s in exporter.get_finished_spans() if s.name == "pioneer.v1.HistoryService/GetThread"]
    assert len(spans) == 1
    assert format(spans[0].context.trace_id, "032x") == trace_id
    assert spans[0].attributes["rpc.system"] == "connect_rpc"


async def test_a_method_no_servicer_implements_is_unimplemented(edge, monkeypatch):
    _handle, client = edge
    from pioneer_grpc.server.servicers.echo import EchoServicer
    from pioneer_grpc.v1 import echo_service_pb2_grpc

    # The generated base method, as a servicer that does not override it answers.
    monkeypatch.setattr(EchoServicer, "Echo", echo_service_pb2_grpc.EchoServiceServicer.Echo)
    response = await http.unary(client, "/pioneer.v1.EchoService/Echo", {}, TOKEN)
    assert response.status_code == 501
    assert response.json()["code"] == "unimplemented"


async def test_error_details_are_readable_and_responses_compact(edge):
    """Each detail's `debug` holds its JSON form: the reason and field names without decoding base64."""
    handle, client = edge
    history = history_service_pb2_grpc.HistoryServiceStub(handle.channel())
    request = history_service_pb2.ListThreadsRequest(page_size=-1, order_by="name", page_token="x" * 5000)
    with pytest.raises(grpc.aio.AioRpcError) as raised:
        await history.ListThreads(request, metadata=handle.metadata())
    grpc_fields = [field for field, _ in decoded(raised.value).violations]
    assert len(grpc_fields) >= 2, grpc_fields
    response = await http.unary(client, f"{HISTORY}/ListThreads", request, TOKEN)
    error = response.json()
    debug = {d["type"]: d["debug"] for d in error["details"]}
    assert debug["google.rpc.ErrorInfo"]["reason"] == decoded(raised.value).reason
    assert debug["google.rpc.ErrorInfo"]["domain"]
    assert [v["field"] for v in debug["google.rpc.BadRequest"]["fieldViolations"]] == grpc_fields
    assert all(v["description"] for v in debug["google.rpc.BadRequest"]["fieldViolations"])
    # The packed value is still there for clients that decode it.
    assert http.reasons(error) == [decoded(raised.value).reason]
    # Answers are one line without padding.
    await history.CreateThread(
        history_service_pb2.CreateThreadRequest(thread_id="t1"), metadata=handle.metadata()
    )
    ok = await http.unary(client, f"{HISTORY}/ListThreads", {"pageSize": 5}, TOKEN)
    assert ok.status_code == 200
    assert "\n" not in ok.text
    assert '": ' not in ok.text
    assert ok.json()["threads"][0]["threadId"] == "t1"
