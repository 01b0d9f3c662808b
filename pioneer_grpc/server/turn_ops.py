"""PrepareTurn: one call per provider round for an agent loop.

Order matters for "nothing stored on bad input": everything that can be
rejected without the database (the compile input, tools, model) is checked
before the new entries are appended. Then: append, load the budgeted history
(leaving out the turn in progress), persist the manifest on the turn, and build
the ChatRequest as history followed by the turn's own entries so far.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager

from pioneer_grpc.errors import FieldViolation, InvalidArgument
from pioneer_grpc.history.render import to_chat_message
from pioneer_grpc.providers.render import render
from pioneer_grpc.providers.validate import check_tool_rules
from pioneer_grpc.server import history_ops
from pioneer_grpc.server.context import ServerContext
from pioneer_grpc.store import entries as entry_store
from pioneer_grpc.store import threads as thread_store
from pioneer_grpc.v1 import chat_pb2, history_pb2, provider_service_pb2, turn_service_pb2

# ChatRequest fields that PrepareTurnRequest carries at its top level: a
# violation on one of them names the request's own field.
_TOP_LEVEL = (
    "model", "tools", "tool_choice", "parallel_tool_calls", "temperature", "max_tokens", "reasoning",
)


def _own_field(field: str) -> str:
    if field.startswith("input."):
        return "compile_input." + field.removeprefix("input.")
    inner = field.removeprefix("chat_request.")
    if inner != field and inner.split(".")[0].split("[")[0] in _TOP_LEVEL:
        return inner
    return field


@contextmanager
def _named_as_request_fields() -> Iterator[None]:
    try:
        yield
    except InvalidArgument as exc:
        violations = [FieldViolation(_own_field(v.field), v.description) for v in exc.violations]
        message = "; ".join(f"{v.field}: {v.description}" for v in violations[:3]) or exc.message
        raise InvalidArgument(message, violations) from exc


def _check_request(request: turn_service_pb2.PrepareTurnRequest) -> list[history_pb2.ConversationEntry]:
    violations = [
        FieldViolation(name, "must not be empty")
        for name in ("thread_id", "turn_id")
        if not getattr(request, name)
    ]
    entries = []
    for i, entry in enumerate(request.new_entries):
        if entry.turn_id and entry.turn_id != request.turn_id:
            violations.append(
                FieldViolation(
                    f"new_entries[{i}].turn_id", f"must be empty or the request's turn_id {request.turn_id!r}"
                )
            )
        stored = history_pb2.ConversationEntry()
        stored.CopyFrom(entry)
        stored.turn_id = request.turn_id
        entries.append(stored)
    if violations:
        raise InvalidArgument(f"{violations[0].field}: {violations[0].description}", violations)
    return entries


def _chat_request(
    request: turn_service_pb2.PrepareTurnRequest, model: str, messages: list[chat_pb2.ChatMessage]
) -> chat_pb2.ChatRequest:
    chat = chat_pb2.ChatRequest(
        model=model,
        messages=messages,
        tools=request.tools,
        tool_choice=request.tool_choice,
        reasoning=request.reasoning,
    )
    for optional in ("parallel_tool_calls", "temperature", "max_tokens"):
        if request.HasField(optional):
            setattr(chat, optional, getattr(request, optional))
    return chat


async def _thread_model(ctx: ServerContext, thread_id: str) -> str:
    """The thread's model; NotFound for an unknown thread. (No entry count: a round needs none.)"""
    async with ctx.sessions() as session:
        return (await thread_store.thread_row(session, thread_id)).model


async def _turn_messages(ctx: ServerContext, thread_id: str, turn_id: str) -> list[chat_pb2.ChatMessage]:
    async with ctx.sessions() as session:
        entries = await entry_store.turn_entries(session, thread_id, turn_id)
    return [to_chat_message(entry) for entry in entries]


async def prepare_turn(
    ctx: ServerContext, request: turn_service_pb2.PrepareTurnRequest
) -> turn_service_pb2.PrepareTurnResponse:
    entries = _check_request(request)
    model = request.model or await _thread_model(ctx, request.thread_id)
    if not model:
        raise InvalidArgument.field("model", "set the model here or on the thread (UpdateThread)")
    with _named_as_request_fields():
        check_tool_rules(request.provider, _chat_request(request, model, []))
        payload = await asyncio.to_thread(
            ctx.compile_cache.compile,
            request.compile_input,
            ctx.config.homes,
            thread_id=request.thread_id,
            turn_id=request.turn_id,
        )
    if entries:
        await history_ops.append_entries(ctx, request.thread_id, entries)
    history, report = await history_ops.load_history(ctx, request.thread_id, exclude_turn_id=request.turn_id)
    current = await _turn_messages(ctx, request.thread_id, request.turn_id)
    event_id = 0
    if ctx.manifests is not None:
        event_id = await ctx.manifests.record(request.thread_id, request.turn_id, payload.manifest)
    chat = _chat_request(request, model, [*history, *current])
    chat.compiled_prompt.CopyFrom(payload)
    response = turn_service_pb2.PrepareTurnResponse(
        chat_request=chat, history_report=report, manifest=payload.manifest, manifest_event_id=event_id
    )
    if request.provider != provider_service_pb2.PROVIDER_UNSPECIFIED:
        with _named_as_request_fields():
            rendered = render(request.provider, chat, request.render_options, options_path="render_options")
        response.provider_body_json = rendered.body_json
        response.provider_path = rendered.path
    return response
