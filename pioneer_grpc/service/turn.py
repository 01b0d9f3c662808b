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
from dataclasses import dataclass, replace

from pioneer_grpc.caps import violations_of
from pioneer_grpc.compiler.validate import input_violations
from pioneer_grpc.errors import FailedPrecondition, FieldViolation, InvalidArgument
from pioneer_grpc.history.entries import entry_violations, id_violation
from pioneer_grpc.history.entry_rules import content_violations
from pioneer_grpc.history.render import to_chat_message
from pioneer_grpc.history.repair import repair
from pioneer_grpc.providers.render import RenderedRequest, render
from pioneer_grpc.providers.validate import tool_rule_violations
from pioneer_grpc.service import history as history_ops
from pioneer_grpc.service import observe
from pioneer_grpc.service.context import ServiceContext
from pioneer_grpc.store import entries as entry_store
from pioneer_grpc.store import threads as thread_store
from pioneer_grpc.v1 import chat_pb2, history_pb2, prompt_pb2, provider_service_pb2, turn_service_pb2

# ErrorInfo reason of a round asked for while the turn's latest tool calls have no result.
TOOL_RESULTS_PENDING = "TOOL_RESULTS_PENDING"

# ChatRequest fields that PrepareTurnRequest carries at its top level: a
# violation on one of them names the request's own field.
_TOP_LEVEL = (
    "model",
    "tools",
    "tool_choice",
    "parallel_tool_calls",
    "temperature",
    "max_tokens",
    "reasoning",
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
        if not exc.violations:
            raise
        violations = [FieldViolation(_own_field(v.field), v.description) for v in exc.violations]
        raise InvalidArgument.of(violations, reason=exc.reason) from exc


def _checked_entries(request: turn_service_pb2.PrepareTurnRequest) -> list[history_pb2.ConversationEntry]:
    """The new entries as they will be stored (the request's turn id on each); every violation at once.

    Everything that can be rejected without the database is checked here, before
    anything is stored: ids, the new entries, the compile input and the tool rules.
    """
    violations = [id_violation(name, getattr(request, name)) for name in ("thread_id", "turn_id")]
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
        # An empty turn_id is reported once, at the top level, not on every entry.
        stored.turn_id = request.turn_id or "-"
        entries.append(stored)
    violations += entry_violations(entries, prefix="new_entries")
    violations += content_violations(entries, prefix="new_entries")
    for violation in [
        *input_violations(request.compile_input),
        *tool_rule_violations(request.provider, _chat_request(request, request.model, [])),
    ]:
        violations.append(FieldViolation(_own_field(violation.field), violation.description))
    InvalidArgument.raise_if(violations)
    return entries


def _checked_request(request: turn_service_pb2.PrepareTurnRequest) -> list[history_pb2.ConversationEntry]:
    """Caps first, then every other check; blocking (a request at its caps is megabytes)."""
    InvalidArgument.raise_if(violations_of(request))
    return _checked_entries(request)


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


async def _thread_model(ctx: ServiceContext, thread_id: str) -> str:
    """The thread's model; NotFound for an unknown thread. (No entry count: a round needs none.)"""
    async with ctx.sessions() as session:
        return (await thread_store.thread_row(session, thread_id)).model


async def _turn_messages(
    ctx: ServiceContext, thread_id: str, turn_id: str
) -> tuple[list[chat_pb2.ChatMessage], list[history_pb2.HistoryDiagnostic]]:
    """The turn's own entries so far, repaired like history; its latest calls must have their results.

    A call the turn moved on from (a later user or assistant entry) was
    interrupted and gets a synthesized result. The latest assistant entry's
    calls may still be running: a round cannot be sent before their results
    are appended, so that is FailedPrecondition naming them.
    """
    async with ctx.sessions() as session:
        entries = await entry_store.turn_entries(session, thread_id, turn_id)
    repaired = repair(entries, close_at_end=False)
    if repaired.pending:
        calls = ", ".join(f"{call_id!r} (entry {e.entry_id!r})" for call_id, e in repaired.pending.items())
        raise FailedPrecondition(
            f"tool call(s) {calls} of turn {turn_id!r} have no result yet: append their results "
            "(new_entries) before preparing the next round",
            reason=TOOL_RESULTS_PENDING,
        )
    return [to_chat_message(entry) for entry in repaired.entries], repaired.diagnostics


@dataclass(frozen=True)
class PreparedTurn:
    chat_request: chat_pb2.ChatRequest
    history_report: history_pb2.HistoryDecisionReport
    manifest_event_id: int
    # The provider body, when the request named a provider.
    rendered: RenderedRequest | None


async def prepare_turn(ctx: ServiceContext, request: turn_service_pb2.PrepareTurnRequest) -> PreparedTurn:
    entries = await asyncio.to_thread(_checked_request, request)
    model = request.model or await _thread_model(ctx, request.thread_id)
    if not model:
        raise InvalidArgument.field("model", "set the model here or on the thread (UpdateThread)")
    observe.turn_started(ctx, request.thread_id, request.turn_id, model)
    payload = prompt_pb2.CompiledPromptPayload()
    with _named_as_request_fields(), ctx.telemetry.span("pioneer.compile") as span:
        hit = await asyncio.to_thread(
            ctx.compile_cache.compile_into,
            payload,
            request.compile_input,
            ctx.config.homes,
            thread_id=request.thread_id,
            turn_id=request.turn_id,
        )
        observe.compiled(ctx, span, hit, payload.manifest)
    if entries:
        await history_ops.append_entries(ctx, request.thread_id, entries, prefix="new_entries")
    history, report = await history_ops.load_history(ctx, request.thread_id, exclude_turn_id=request.turn_id)
    current, repairs = await _turn_messages(ctx, request.thread_id, request.turn_id)
    if repairs:
        # The load's report may be the cached one: extend a copy.
        cached, report = report, history_pb2.HistoryDecisionReport()
        report.CopyFrom(cached)
        report.diagnostics.extend(repairs)
    event_id = await observe.record_manifest(ctx, request.thread_id, request.turn_id, payload.manifest)
    chat = _chat_request(request, model, [*history, *current])
    chat.compiled_prompt.CopyFrom(payload)
    rendered = None
    if request.provider != provider_service_pb2.PROVIDER_UNSPECIFIED:
        with (
            _named_as_request_fields(),
            ctx.telemetry.span(
                "pioneer.provider.render", observe.render_attributes(request.provider, model)
            ),
        ):
            rendered = await asyncio.to_thread(
                render, request.provider, chat, request.render_options, options_path="render_options"
            )
        # Notices name the request's own fields, as violations do.
        rendered = replace(
            rendered, notices=tuple(replace(n, field=_own_field(n.field)) for n in rendered.notices)
        )
    return PreparedTurn(chat, report, event_id, rendered)
