"""Two tenants on one server, on SQLite and PostgreSQL, over gRPC and HTTP/JSON: every RPC of the
service descriptors, called by one tenant on the other's thread, answers what it answers for a
thread that exists nowhere, and no answer or event carries the other tenant's data or name.

The walk is generated from the descriptors: an RPC added to a service and not to WALK fails
`test_the_walk_covers_every_rpc`. Thread ids collide on purpose: each tenant has thread
"shared", each with its own content.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import grpc
import httpx
import pytest
from google.protobuf import descriptor_pool, json_format, message_factory
from google.protobuf.message import Message

from pioneer_grpc import reasons
from pioneer_grpc.client import Provider, tool, turn_ref, user_entry
from pioneer_grpc.server.app import SERVICE_NAMES
from pioneer_grpc.tenants import TENANT_HEADER
from pioneer_grpc.v1 import (
    chat_pb2,
    history_pb2,
    history_service_pb2,
    manifest_service_pb2,
    prompt_compiler_service_pb2,
    prompt_pb2,
    provider_service_pb2,
    turn_service_pb2,
)
from tests.support import decoded
from tests.tenants.files import ADMIN, AGENT, OTHER_AGENT, write_tenants
from tests.web import connect_http as http

SECRET = "ACME-SECRET-7f3a"
# What the other tenant must never see: acme's content, and acme's name.
LEAKS = (SECRET.encode(), b"acme")

H, M, C, T = (
    "/pioneer.v1.HistoryService",
    "/pioneer.v1.ManifestService",
    "/pioneer.v1.PromptCompilerService",
    "/pioneer.v1.TurnService",
)


def _prepare(thread: str, turn: str = "u9") -> turn_service_pb2.PrepareTurnRequest:
    return turn_service_pb2.PrepareTurnRequest(
        thread_id=thread,
        turn_id=turn,
        new_entries=[user_entry(f"{turn}.user", "a question", turn_id=turn)],
        tools=[tool("list_files", "List files", {"type": "object", "properties": {}})],
        provider=Provider.PROVIDER_OPENAI_CHAT_COMPLETIONS,
    )


# Each RPC's request naming thread `t` (an RPC that names no thread ignores it).
WALK: dict[str, Callable[[str], Message]] = {
    f"{C}/CompilePrompt": lambda t: prompt_compiler_service_pb2.CompilePromptRequest(
        input=prompt_pb2.PromptCompileInput(), thread_id=t, turn_id="u1"
    ),
    f"{C}/EnsureBootstrapFiles": lambda t: prompt_compiler_service_pb2.EnsureBootstrapFilesRequest(),
    f"{H}/CreateThread": lambda t: history_service_pb2.CreateThreadRequest(thread_id=t),
    f"{H}/GetThread": lambda t: history_service_pb2.GetThreadRequest(thread_id=t),
    f"{H}/UpdateThread": lambda t: history_service_pb2.UpdateThreadRequest(
        thread_id=t, config=history_pb2.ThreadConfig(summary_model="small")
    ),
    f"{H}/DeleteThread": lambda t: history_service_pb2.DeleteThreadRequest(thread_id=t),
    f"{H}/AppendEntries": lambda t: history_service_pb2.AppendEntriesRequest(
        thread_id=t, entries=[user_entry("u5.user", "more", turn_id="u5")]
    ),
    f"{H}/CompleteTurn": lambda t: history_service_pb2.CompleteTurnRequest(thread_id=t, turn_id="u1"),
    f"{H}/AbandonTurn": lambda t: history_service_pb2.AbandonTurnRequest(thread_id=t, turn_id="u2"),
    f"{H}/LoadConversationHistory": lambda t: history_service_pb2.LoadConversationHistoryRequest(thread_id=t),
    f"{H}/GetThreadSummary": lambda t: history_service_pb2.GetThreadSummaryRequest(thread_id=t),
    f"{H}/CountTokens": lambda t: history_service_pb2.CountTokensRequest(texts=["hello"]),
    f"{H}/ListThreads": lambda t: history_service_pb2.ListThreadsRequest(),
    f"{H}/ListTurns": lambda t: history_service_pb2.ListTurnsRequest(thread_id=t),
    f"{H}/ListEntries": lambda t: history_service_pb2.ListEntriesRequest(thread_id=t),
    f"{M}/GetTurnManifest": lambda t: manifest_service_pb2.GetTurnManifestRequest(thread_id=t, turn_id="u1"),
    f"{M}/WatchManifests": lambda t: manifest_service_pb2.WatchManifestsRequest(thread_id=t),
    f"{M}/DiffManifests": lambda t: manifest_service_pb2.DiffManifestsRequest(
        base=turn_ref(t, "u1"), target=turn_ref(t, "u1")
    ),
    f"{M}/ListRenderedRounds": lambda t: manifest_service_pb2.ListRenderedRoundsRequest(
        thread_id=t, turn_id="u1"
    ),
    f"{M}/ListRoundUsage": lambda t: manifest_service_pb2.ListRoundUsageRequest(thread_id=t),
    "/pioneer.v1.ProviderService/RenderChatRequest": lambda t: provider_service_pb2.RenderChatRequestRequest(
        provider=Provider.PROVIDER_ANTHROPIC_MESSAGES,
        chat_request=chat_pb2.ChatRequest(
            model="claude-x", messages=[chat_pb2.ChatMessage(role=chat_pb2.CHAT_ROLE_USER, content="hi")]
        ),
    ),
    f"{T}/PrepareTurn": lambda t: _prepare(t),
    "/pioneer.v1.EchoService/Echo": lambda t: _echo(),
}


def _echo() -> Message:
    from pioneer_grpc.v1 import echo_service_pb2

    return echo_service_pb2.EchoRequest(payload=b"ping")


def _methods() -> dict[str, Any]:
    pool = descriptor_pool.Default()
    return {
        f"/{service.full_name}/{method.name}": method
        for service in (pool.FindServiceByName(name) for name in SERVICE_NAMES)
        for method in service.methods
    }


def _response_class(method: Any) -> type[Message]:
    return message_factory.GetMessageClass(method.output_type)  # type: ignore[no-any-return]


def test_the_walk_covers_every_rpc():
    served = set(_methods())
    assert sorted(served - set(WALK)) == [], "add each new RPC to WALK: how it names a thread"
    assert sorted(set(WALK) - served) == []


@pytest.fixture
async def served(database_url, server_factory, tmp_path):
    path = write_tenants(tmp_path / "tenants.toml")
    handle = await server_factory(
        database_url=database_url, http_listen="127.0.0.1:0", tenants_file=path, keep_rendered_requests=True
    )
    async with httpx.AsyncClient(base_url=f"http://{handle.running.http_address}", timeout=30) as client:
        yield handle, client


class Edge:
    """One edge's calls with a token (and, for an admin, a tenant named): each call's outcome as a
    comparable value, and every byte the answer carried."""

    def __init__(self, handle: Any, client: httpx.AsyncClient, kind: str) -> None:
        self.handle, self.client, self.kind = handle, client, kind
        self.methods = _methods()

    async def call(self, token: str, path: str, request: Message, tenant: str = "") -> tuple[Any, bytes]:
        method = self.methods[path]
        if self.kind == "grpc":
            return await self._grpc(token, path, method, request, tenant)
        return await self._http(token, path, method, request, tenant)

    async def _grpc(
        self, token: str, path: str, method: Any, request: Message, tenant: str
    ) -> tuple[Any, bytes]:
        metadata = [("authorization", f"Bearer {token}")]
        if tenant:
            metadata.append((TENANT_HEADER, tenant))
        response_class = _response_class(method)
        channel = self.handle.channel()
        try:
            if method.server_streaming:
                stream = channel.unary_stream(
                    path,
                    request_serializer=type(request).SerializeToString,
                    response_deserializer=response_class.FromString,
                )(request, metadata=metadata)
                kinds, seen = await _first_until_heartbeat(stream)
                return ("OK", kinds), seen
            call = channel.unary_unary(
                path,
                request_serializer=type(request).SerializeToString,
                response_deserializer=response_class.FromString,
            )
            answer = await call(request, metadata=metadata)
            return ("OK", _shape(answer)), answer.SerializeToString()
        except grpc.aio.AioRpcError as err:
            failure = decoded(err)
            raw = (err.details() or "").encode() + repr(err.trailing_metadata()).encode()
            return (
                failure.code.name,
                failure.reason,
                failure.message,
                failure.metadata,
                failure.violations,
            ), raw

    async def _http(
        self, token: str, path: str, method: Any, request: Message, tenant: str
    ) -> tuple[Any, bytes]:
        extra = {TENANT_HEADER: tenant} if tenant else {}
        if method.server_streaming:
            kinds: list[str] = []
            seen = b""
            sent = http.headers(token, **{"content-type": "application/connect+json", **extra})
            body = http.envelope(json_format.MessageToDict(request))
            async with self.client.stream("POST", path, content=body, headers=sent) as response:
                if response.status_code != 200:
                    data = await response.aread()
                    return _http_error(json.loads(data)), data
                async with asyncio.timeout(10):
                    async for chunk in response.aiter_bytes():
                        seen += chunk
                        kinds += [k for k in ("event", "heartbeat") if f'"{k}"'.encode() in chunk]
                        if b'"heartbeat"' in chunk or b'"error"' in chunk:
                            break
            return ("OK", sorted(set(kinds))), seen
        response = await http.unary(self.client, path, request, token, **extra)
        if response.status_code == 200:
            answer = json_format.Parse(response.text, _response_class(method)())
            return ("OK", _shape(answer)), response.content
        return _http_error(response.json()), response.content


def _http_error(body: dict[str, Any]) -> tuple[Any, ...]:
    found = http.reasons(body)
    return (body["code"].upper(), found[0] if found else "", body.get("message", ""))


async def _first_until_heartbeat(stream: Any) -> tuple[list[str], bytes]:
    """A watch's messages until its first heartbeat ("caught up, now live"): their kinds, and bytes."""
    kinds: list[str] = []
    seen = b""
    async with asyncio.timeout(10):
        async for message in stream:
            seen += message.SerializeToString()
            kind = message.WhichOneof("kind")
            kinds.append(kind)
            if kind == "heartbeat":
                break
    stream.cancel()
    return sorted(set(kinds)), seen


def _shape(answer: Message) -> list[str]:
    """The fields an answer set (not their values: times and ids differ between two threads)."""
    return sorted(field.name for field, _ in answer.ListFields())


def _renamed(outcome: Any, foreign: str, missing: str) -> Any:
    return json.loads(json.dumps(outcome, default=str).replace(missing, foreign))


async def _seed(edge: Edge, token: str, thread: str, content: str) -> None:
    """A thread with a completed turn u1 (a round with its manifest), an open turn u2, kept rounds."""
    call = edge.call
    outcome, _ = await call(
        token,
        f"{H}/CreateThread",
        history_service_pb2.CreateThreadRequest(
            thread_id=thread, config=history_pb2.ThreadConfig(model="gpt-4o")
        ),
    )
    assert outcome[0] == "OK", outcome
    prepare = _prepare(thread, "u1")
    prepare.new_entries[0].content = content
    outcome, _ = await call(token, f"{T}/PrepareTurn", prepare)
    assert outcome[0] == "OK", outcome
    done = history_service_pb2.CompleteTurnRequest(thread_id=thread, turn_id="u1")
    done.entries.append(
        history_pb2.ConversationEntry(
            entry_id="u1.answer", role=history_pb2.ENTRY_ROLE_ASSISTANT, content=content
        )
    )
    outcome, _ = await call(token, f"{H}/CompleteTurn", done)
    assert outcome[0] == "OK", outcome
    opened = history_service_pb2.AppendEntriesRequest(
        thread_id=thread, entries=[user_entry("u2.user", content, turn_id="u2")]
    )
    outcome, _ = await call(token, f"{H}/AppendEntries", opened)
    assert outcome[0] == "OK", outcome


@pytest.mark.parametrize("kind", ["grpc", "http"])
async def test_another_tenants_thread_answers_as_a_missing_one_on_every_rpc(served, kind):
    handle, client = served
    edge = Edge(handle, client, kind)
    compared = []
    for n, (path, build) in enumerate(WALK.items()):
        foreign, missing = f"x{n}-{kind}", f"m{n}-{kind}"
        await _seed(edge, AGENT, foreign, SECRET)
        theirs, seen = await edge.call(OTHER_AGENT, path, build(foreign))
        nobody, _ = await edge.call(OTHER_AGENT, path, build(missing))
        assert _renamed(theirs, foreign, missing) == _renamed(nobody, foreign, missing), path
        for leak in LEAKS:
            assert leak not in seen, (path, leak)
        compared.append(path)
        # acme's thread is as it was: nothing the other tenant sent reached it.
        listed = history_service_pb2.ListEntriesRequest(thread_id=foreign)
        mine, raw = await edge.call(AGENT, f"{H}/ListEntries", listed)
        assert mine[0] == "OK" and raw.count(SECRET.encode()) == 3, path
    assert len(compared) == len(WALK)


@pytest.mark.parametrize("kind", ["grpc", "http"])
async def test_colliding_thread_ids_each_tenant_sees_its_own(served, kind):
    handle, client = served
    edge = Edge(handle, client, kind)
    shared = f"shared-{kind}"
    await _seed(edge, AGENT, shared, SECRET)
    await _seed(edge, OTHER_AGENT, shared, "zeta's own words")
    for path, build in WALK.items():
        if path.endswith(("/DeleteThread", "/AbandonTurn", "/CreateThread")):
            continue  # writes that would change the shared thread for the calls after them
        _, seen = await edge.call(OTHER_AGENT, path, build(shared))
        for leak in LEAKS:
            assert leak not in seen, (path, leak)
    # Each tenant's load is its own history.
    load = history_service_pb2.LoadConversationHistoryRequest(thread_id=shared)
    _, mine = await edge.call(AGENT, f"{H}/LoadConversationHistory", load)
    _, theirs = await edge.call(OTHER_AGENT, f"{H}/LoadConversationHistory", load)
    assert SECRET.encode() in mine and SECRET.encode() not in theirs and b"zeta's own words" in theirs


@pytest.mark.parametrize("kind", ["grpc", "http"])
async def test_an_admin_sees_every_tenant_and_names_one(served, kind):
    handle, client = served
    edge = Edge(handle, client, kind)
    shared = f"both-{kind}"
    await _seed(edge, AGENT, shared, SECRET)
    await _seed(edge, OTHER_AGENT, shared, "zeta's own words")
    listed = history_service_pb2.ListThreadsRequest(page_size=1000)
    _, raw = await edge.call(ADMIN, f"{H}/ListThreads", listed)
    threads = _threads(kind, raw)
    assert {("acme", shared), ("zeta", shared)} <= threads
    _, raw = await edge.call(OTHER_AGENT, f"{H}/ListThreads", listed)
    assert {tenant for tenant, _ in _threads(kind, raw)} == {"zeta"}
    load = history_service_pb2.LoadConversationHistoryRequest(thread_id=shared)
    _, seen = await edge.call(ADMIN, f"{H}/LoadConversationHistory", load, tenant="acme")
    assert SECRET.encode() in seen
    _, seen = await edge.call(ADMIN, f"{H}/LoadConversationHistory", load, tenant="zeta")
    assert SECRET.encode() not in seen and b"zeta's own words" in seen
    # Anyone else naming another tenant: PERMISSION_DENIED, whether or not that tenant exists.
    for tenant in ("acme", "no-such-tenant"):
        outcome, _ = await edge.call(
            OTHER_AGENT,
            f"{H}/GetThread",
            history_service_pb2.GetThreadRequest(thread_id=shared),
            tenant=tenant,
        )
        assert outcome[:2] == ("PERMISSION_DENIED", reasons.TENANT_NOT_YOURS), outcome
    outcome, _ = await edge.call(
        OTHER_AGENT, f"{H}/GetThread", history_service_pb2.GetThreadRequest(thread_id=shared), tenant="zeta"
    )
    assert outcome[0] == "OK"


def _threads(kind: str, raw: bytes) -> set[tuple[str, str]]:
    if kind == "grpc":
        answer = history_service_pb2.ListThreadsResponse.FromString(raw)
    else:
        answer = json_format.Parse(raw, history_service_pb2.ListThreadsResponse())
    return {(t.tenant, t.thread_id) for t in answer.threads}


async def test_a_watch_gets_only_its_tenants_events_and_an_admins_every_tenants(served):
    handle, client = served
    channel = handle.channel()

    def watch(token: str) -> Any:
        stub = channel.unary_stream(
            f"{M}/WatchManifests",
            request_serializer=manifest_service_pb2.WatchManifestsRequest.SerializeToString,
            response_deserializer=manifest_service_pb2.WatchManifestsResponse.FromString,
        )
        return stub(
            manifest_service_pb2.WatchManifestsRequest(live_only=True),
            metadata=[("authorization", f"Bearer {token}")],
        )

    theirs, admin = watch(OTHER_AGENT), watch(ADMIN)
    for stream in (theirs, admin):  # live from here on
        assert (await stream.read()).WhichOneof("kind") == "heartbeat"
    edge = Edge(handle, client, "grpc")
    await _seed(edge, AGENT, "watched", SECRET)
    await _seed(edge, OTHER_AGENT, "watched", "zeta's own words")
    seen_by_admin = []
    async with asyncio.timeout(10):
        while len(seen_by_admin) < 2:
            message = await admin.read()
            if message.WhichOneof("kind") == "event":
                seen_by_admin.append(message.event.tenant)
        message = await theirs.read()
        while message.WhichOneof("kind") != "event":
            message = await theirs.read()
    assert seen_by_admin == ["acme", "zeta"]
    assert message.event.tenant == "zeta" and SECRET.encode() not in message.SerializeToString()
    theirs.cancel()
    admin.cancel()
