"""The Python client against a live server: every RPC, sync and async, errors as classes with reasons."""

from __future__ import annotations

import asyncio

import grpc
import pytest

from pioneer_grpc import reasons
from pioneer_grpc.client import (
    RPCS,
    AsyncClient,
    Client,
    EntryConflict,
    InvalidArgumentError,
    PromptCompileInput,
    Provider,
    ThreadConfig,
    ThreadConflict,
    ThreadExists,
    ThreadNotFound,
    ToolCall,
    TurnCompleted,
    UnauthenticatedError,
    UnavailableError,
    tool,
    tool_round,
    turn_ref,
    user_entry,
)
from pioneer_grpc.v1 import chat_pb2
from pioneer_grpc.v1.history_service_pb2 import ImportThreadRequest

TOKEN = "client-secret"


def test_every_rpc_of_every_service_is_a_method_of_both_clients():
    from pioneer_grpc.server.app import SERVICES
    from pioneer_grpc.v1 import (
        echo_service_pb2,
        history_service_pb2,
        manifest_service_pb2,
        prompt_compiler_service_pb2,
        provider_service_pb2,
        turn_service_pb2,
    )

    served = set()
    for module in (
        echo_service_pb2,
        history_service_pb2,
        manifest_service_pb2,
        prompt_compiler_service_pb2,
        provider_service_pb2,
        turn_service_pb2,
    ):
        for service in module.DESCRIPTOR.services_by_name.values():
            served |= {f"/{service.full_name}/{m.name}" for m in service.methods}
    assert len(SERVICES) == 6
    assert {rpc.path for rpc in RPCS.values()} == served
    for name in RPCS:
        assert callable(getattr(Client, name))
        assert callable(getattr(AsyncClient, name))
    assert RPCS["create_thread"].path == "/pioneer.v1.HistoryService/CreateThread"


async def test_the_async_client_calls_every_rpc(server_factory):
    server = await server_factory(token=TOKEN)
    called = set()
    async with await AsyncClient.connect(server.address, token=TOKEN) as client:

        async def call(name, *args, **fields):
            called.add(name)
            return await getattr(client, name)(*args, **fields)

        created = await call("create_thread", thread_id="t", config=ThreadConfig(model="gpt-x"))
        assert created.thread.thread_id == "t"
        assert (await call("get_thread", thread_id="t")).thread.config.model == "gpt-x"
        updated = await call("update_thread", thread_id="t", config=ThreadConfig(summary_model="small"))
        assert updated.thread.config.summary_model == "small"
        first = await call(
            "prepare_turn",
            thread_id="t",
            turn_id="u1",
            new_entries=[user_entry("u1.user", "list the files")],
            tools=[tool("list_files", "List files", {"type": "object", "properties": {}})],
            provider=Provider.PROVIDER_OPENAI_CHAT_COMPLETIONS,
        )
        assert first.chat_request.messages[-1].content == "list the files"
        assert '"list_files"' in first.provider_body_json
        call_ = ToolCall(id="c1", name="list_files", arguments="{}")
        appended = await call(
            "append_entries",
            thread_id="t",
            entries=tool_round("u1.r1", [call_], {"c1": "a.txt"}, turn_id="u1"),
        )
        assert appended.created_count == 2
        assert (await call("complete_turn", thread_id="t", turn_id="u1")).completed_entry_count == 3
        loaded = await call("load_conversation_history", thread_id="t")
        assert [m.role for m in loaded.messages] == [
            chat_pb2.CHAT_ROLE_USER,
            chat_pb2.CHAT_ROLE_ASSISTANT,
            chat_pb2.CHAT_ROLE_TOOL,
        ]
        assert not (await call("get_thread_summary", thread_id="t")).HasField("summary")
        assert (await call("count_tokens", texts=["hello world"])).total_tokens > 0
        assert [t.thread_id for t in (await call("list_threads")).threads] == ["t"]
        assert [t.turn_id for t in (await call("list_turns", thread_id="t")).turns] == ["u1"]
        assert len((await call("list_entries", thread_id="t")).entries) == 3
        manifest = await call("get_turn_manifest", thread_id="t", turn_id="u1")
        assert manifest.event_id == first.manifest_event_id
        compiled = await call("compile_prompt", input=PromptCompileInput(), thread_id="t", turn_id="u2")
        diff = await call("diff_manifests", base=turn_ref("t", "u1"), target=turn_ref("t", "u2"))
        assert not diff.stable_changed
        # Off unless the server keeps rendered requests.
        assert not (await call("list_rendered_rounds", thread_id="t", turn_id="u1")).kept
        # No loop reported usage here: no usage to list; the round is on the timeline, not reported.
        assert not (await call("list_round_usage", thread_id="t")).rounds
        timeline = await call("list_thread_timeline", thread_id="t")
        assert (timeline.total_rounds, timeline.next_page_token) == (1, "")
        [only] = timeline.rounds
        assert (only.round, only.usage.manifest_event_id) == (1, first.manifest_event_id)
        assert only.usage.HasField("prepare_time") and not only.usage.HasField("reported")
        stream = client.watch_manifests(thread_id="t")
        called.add("watch_manifests")
        event = await anext(stream)
        assert event.event.event_id == first.manifest_event_id
        await stream.aclose()
        assert compiled.manifest_event_id > first.manifest_event_id
        files = await call("ensure_bootstrap_files")
        assert {f.name for f in files.files} >= {"SOUL.md", "IDENTITY.md"}
        rendered = await call(
            "render_chat_request",
            provider=Provider.PROVIDER_ANTHROPIC_MESSAGES,
            chat_request=chat_pb2.ChatRequest(model="claude-x", messages=list(loaded.messages)),
        )
        assert rendered.path == "/v1/messages"
        # A message above grpc's 4 MiB default passes: the client matches the server's 16 MiB.
        big = b"x" * (8 * 1024 * 1024)
        assert (await call("echo", payload=big)).payload == big
        opened = await call(
            "append_entries", thread_id="t", entries=[user_entry("u3.user", "hi", turn_id="u3")]
        )
        assert opened.created_count == 1
        abandoned = await call("abandon_turn", thread_id="t", turn_id="u3")
        assert (abandoned.abandoned, abandoned.dropped_entry_count) == (True, 1)
        forked = await call("fork_thread", source_thread_id="t", source_turn_id="u1", thread_id="fork")
        assert (forked.thread.entry_count, forked.turn_count) == (3, 1)
        exported = b"".join([r.chunk async for r in client.export_thread(thread_id="fork")])
        called.add("export_thread")
        imported = await call(
            "import_thread",
            [
                ImportThreadRequest(thread_id="copy", chunk=exported[:100]),
                ImportThreadRequest(chunk=exported[100:]),
            ],
        )
        assert imported.thread.entry_count == 3
        with pytest.raises(ThreadExists):
            await client.import_thread([ImportThreadRequest(chunk=exported)])
        assert (await call("delete_thread", thread_id="t")).deleted
        assert not (await call("delete_thread", thread_id="t", allow_missing=True)).deleted
    assert called == set(RPCS)


async def test_errors_are_classes_with_code_reason_metadata_and_violations(server):
    async with await AsyncClient.connect(server.address) as client:
        with pytest.raises(ThreadNotFound) as missing:
            await client.get_thread(thread_id="nope")
        assert missing.value.code == grpc.StatusCode.NOT_FOUND
        assert missing.value.reason == reasons.THREAD_NOT_FOUND
        assert missing.value.domain == "pioneer.v1"
        assert missing.value.metadata == {"thread_id": "nope"}
        assert not missing.value.retryable
        assert str(missing.value) == (
            "/pioneer.v1.HistoryService/GetThread: NOT_FOUND [THREAD_NOT_FOUND]: thread 'nope' does not exist"
        )
        await client.create_thread(thread_id="t", config=ThreadConfig(model="m"))
        with pytest.raises(InvalidArgumentError) as invalid:
            await client.append_entries(thread_id="t", entries=[user_entry("", "x")])
        assert invalid.value.reason == reasons.INVALID_ARGUMENT
        assert [v.field for v in invalid.value.violations] == ["entries[0].entry_id", "entries[0].turn_id"]
        await client.create_thread(thread_id="t", config=ThreadConfig(model="m"))
        again = await client.create_thread(thread_id="t", config=ThreadConfig(model="m"))
        assert again.thread.thread_id == "t"
        with pytest.raises(ThreadConflict):
            await client.create_thread(thread_id="t", config=ThreadConfig(model="other"))
        await client.append_entries(thread_id="t", entries=[user_entry("e1", "hi", turn_id="u1")])
        with pytest.raises(EntryConflict) as conflict:
            await client.append_entries(thread_id="t", entries=[user_entry("e1", "hi", turn_id="u2")])
        assert conflict.value.metadata["differing_fields"] == "turn_id"
        await client.complete_turn(thread_id="t", turn_id="u1")
        with pytest.raises(TurnCompleted):
            await client.append_entries(thread_id="t", entries=[user_entry("e2", "hi", turn_id="u1")])
        with pytest.raises(TypeError):
            await client.get_thread(thread_id="t", bogus=1)


async def test_the_token_is_sent_and_a_missing_one_is_unauthenticated(server_factory):
    server = await server_factory(token=TOKEN)
    async with await AsyncClient.connect(server.address) as anonymous:
        with pytest.raises(UnauthenticatedError) as denied:
            await anonymous.list_threads()
        assert denied.value.code == grpc.StatusCode.UNAUTHENTICATED


async def test_a_wrong_address_fails_at_connect_with_a_readable_message(tmp_path):
    import socket

    with socket.socket() as probe:  # a port nobody listens on once closed
        probe.bind(("127.0.0.1", 0))
        address = f"127.0.0.1:{probe.getsockname()[1]}"
    with pytest.raises(UnavailableError) as unreachable:
        await AsyncClient.connect(address, connect_timeout=0.5)
    assert f"cannot reach a pioneer-grpc server at {address} (plaintext)" in str(unreachable.value)
    with pytest.raises(UnavailableError):
        await asyncio.to_thread(Client.connect, address, connect_timeout=0.5)


async def test_the_sync_client_calls_unary_and_streaming_rpcs(server):
    def run() -> list[int]:
        with Client.connect(server.address, timeout=10) as client:
            client.create_thread(thread_id="s", config=ThreadConfig(model="m"))
            prepared = client.prepare_turn(thread_id="s", turn_id="u1", new_entries=[user_entry("a", "hi")])
            with pytest.raises(ThreadNotFound):
                client.complete_turn(thread_id="gone", turn_id="u1")
            events = client.watch_manifests(thread_id="s")
            first = next(events)
            events.close()
            client.complete_turn(thread_id="s", turn_id="u1")
            exported = b"".join(r.chunk for r in client.export_thread(thread_id="s"))
            copied = client.import_thread(iter([ImportThreadRequest(thread_id="s2", chunk=exported)]))
            assert copied.thread.entry_count == 1
            return [prepared.manifest_event_id, first.event.event_id]

    expected, seen = await asyncio.to_thread(run)
    assert expected == seen
