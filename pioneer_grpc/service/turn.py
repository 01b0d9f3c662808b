"""PrepareTurn: one call per provider round for an agent loop.

Order matters for "nothing stored on bad input": everything that can be
rejected without storage (the compile input, the entries, the tools) is checked
first, and the compile and the new entries' token counts (in the tokenizer of
the thread's model as this server last saw it, else cl100k_base) are made
before the store is asked anything. Then the round goes down into the store
twice (store/port.py `Rounds`):

    opened = await store.rounds.open(ask)     # the thread's history state and what its kept
                                              # history needs, the turn, its entries, the
                                              # thread's calls and entries the batch names
    ... the pure cores, no storage in between: the entries counted again when the thread's
        model counts in another tokenizer, the append's checks (the history rules, repeats, a
        completed turn), the turn's own entries repaired, its latest tool calls answered,
        the budgeted history leaving out the turn in progress (the kept one, brought current
        by the turns completed since: service/history_current.py), the provider body rendered
    committed = await store.rounds.commit(plan)   # the turn, its new entries, the manifest on
                                                  # it and the event: only on the thread `open`
                                                  # read, else nothing and the round runs again

A rejection anywhere (a turn whose latest tool calls have no result yet,
FAILED_PRECONDITION; a body the provider rules refuse, INVALID_ARGUMENT) comes
before the commit: a failed round stores nothing and publishes no event. The
body's encoding (the bulk of a large body's bytes, which cannot fail) runs
beside the commit.

A history over the threshold is settled (cleared, truncated or compressed, as a
load would) between two rounds: the first stops before its commit when it finds
one, the history is settled (a summarizer may be asked), and the round runs again
with that answer while the thread's history is still the one it settled.

The history comes back encoded, shared between rounds while the thread's
history is unchanged and extended (not encoded again) when turns complete; the
ChatRequest is written as its small fields joined with those bytes, never as 200
messages copied and encoded again.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from functools import partial

from pioneer_grpc import reasons
from pioneer_grpc.caps import violations_of
from pioneer_grpc.compiler.validate import input_violations, known_valid
from pioneer_grpc.errors import Aborted, FailedPrecondition, FieldViolation, InvalidArgument
from pioneer_grpc.history import decide
from pioneer_grpc.history.entries import content_hash, entry_violations, id_violation
from pioneer_grpc.history.entry_rules import StoredCalls, call_violations, content_violations, named_call_ids
from pioneer_grpc.history.prefix_break import RoundPrefix
from pioneer_grpc.history.render import entry_counted_texts, to_chat_message
from pioneer_grpc.history.repair import repair
from pioneer_grpc.history.tokens import count_blocking
from pioneer_grpc.models.registry import Registry
from pioneer_grpc.providers.prefix import cut_prefix, extend_prefix, render_prefix, slide_prefix
from pioneer_grpc.providers.render import RenderedBody, RenderedRequest, render_after
from pioneer_grpc.providers.validate import tool_rule_violations
from pioneer_grpc.remembered import Remembered
from pioneer_grpc.service import (
    history_load,
    observe,
    prefix_breaks,
    quotas,
    rendered_rounds,
    round_usage,
    section_texts,
    token_fit,
)
from pioneer_grpc.service.context import ServiceContext
from pioneer_grpc.service.ending import to_the_end
from pioneer_grpc.service.load_cache import CachedLoad
from pioneer_grpc.service.recent_rounds import MAX_KEPT_BODY_SOURCE_BYTES, SeenRound
from pioneer_grpc.service.tenancy import thread_key
from pioneer_grpc.store.entries import as_loaded, entry_conflict, turn_completed
from pioneer_grpc.store.manifests import prepare_manifest
from pioneer_grpc.store.port import (
    Conflict,
    KeptCounts,
    NewEntry,
    OpenedRound,
    PreparedManifest,
    Recorded,
    RoundAsk,
    RoundCommit,
    RoundPrepared,
)
from pioneer_grpc.telemetry import tracing
from pioneer_grpc.v1 import chat_pb2, history_pb2, prompt_pb2, provider_service_pb2, turn_service_pb2
from pioneer_grpc.wire import repeated_records

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


def _checked_entries(
    request: turn_service_pb2.PrepareTurnRequest,
    input_known_valid: bool,
    head: chat_pb2.ChatRequest | None,
    models: Registry,
) -> list[history_pb2.ConversationEntry]:
    """The new entries as they will be stored (the request's turn id on each); every violation at once.

    Everything that can be rejected without the database is checked here, before
    anything is stored: ids, the new entries, the compile input (unless known
    valid) and the tool rules (of `head`, the ChatRequest without messages; None
    when it is known clean).
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
    if request.provider_body_only and request.provider == provider_service_pb2.PROVIDER_UNSPECIFIED:
        violations.append(FieldViolation("provider_body_only", "name a provider to ask for its body only"))
    for violation in [
        *(input_violations(request.compile_input) if not input_known_valid else ()),
        *(tool_rule_violations(request.provider, head, models=models) if head is not None else ()),
    ]:
        violations.append(FieldViolation(_own_field(violation.field), violation.description))
    InvalidArgument.raise_if(violations)
    return entries


# Encoded ChatRequests without messages (with the provider) whose fields passed their caps and tool rules.
_known_clean_heads: Remembered[bool] = Remembered(2 * 1024 * 1024)


def _checked_request(
    request: turn_service_pb2.PrepareTurnRequest, models: Registry
) -> tuple[list[history_pb2.ConversationEntry], chat_pb2.ChatRequest]:
    """The new entries to store, and the ChatRequest without messages (the request's model on it).

    Caps first, then every other check; blocking (a request at its caps is megabytes).
    What an agent loop sends the same every round is not walked again once a
    round passed with it: the compile input, and the model, tools and options
    (checked as the ChatRequest they make, which is the key remembered).
    """
    input_known_valid = known_valid(request.compile_input)
    skip: tuple[str, ...] = ("compile_input",) if input_known_valid else ()
    head = _chat_request(request, request.model, [])
    # The registry decides which tool rules apply to the model: a server's own models file keys apart.
    head_key = b"%d:" % request.provider + models.key + head.SerializeToString(deterministic=True)
    clean_head = _known_clean_heads.get(head_key) is not None
    if clean_head:
        skip += _TOP_LEVEL
    InvalidArgument.raise_if(violations_of(request, skip=skip))
    entries = _checked_entries(request, input_known_valid, None if clean_head else head, models)
    _known_clean_heads.put(head_key, True)
    return entries, head


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


def _pending_error(turn_id: str, pending: dict[str, history_pb2.ConversationEntry]) -> FailedPrecondition:
    calls = ", ".join(f"{call_id!r} (entry {e.entry_id!r})" for call_id, e in pending.items())
    return FailedPrecondition(
        f"tool call(s) {calls} of turn {turn_id!r} have no result yet; nothing of this request was "
        "stored: send the results in new_entries (with the call, unless it is stored already)",
        reason=reasons.TOOL_RESULTS_PENDING,
    )


@dataclass
class PreparedTurn:
    """A round's answer, its history kept encoded: `encoded_chat_request()` joins bytes, copies no message."""

    # The ChatRequest without its messages.
    chat_head: chat_pb2.ChatRequest
    # The history messages, already framed as records of ChatRequest.messages, in parts to join.
    history: tuple[bytes, ...]
    current: list[chat_pb2.ChatMessage]
    history_report: history_pb2.HistoryDecisionReport
    manifest_event_id: int
    # The provider body, when the request named a provider.
    rendered: RenderedRequest | None = None
    _encoded: bytes | None = None

    @property
    def manifest(self) -> prompt_pb2.PromptManifest:
        return self.chat_head.compiled_prompt.manifest

    def chat_request_parts(self) -> list[bytes]:
        """The encoded ChatRequest as parts to join: its head, the history, the turn's own messages."""
        current = repeated_records(MESSAGES_FIELD, (m.SerializeToString() for m in self.current))
        return [self.chat_head.SerializeToString(), *self.history, current]

    def encoded_chat_request(self) -> bytes:
        if self._encoded is None:
            self._encoded = b"".join(self.chat_request_parts())
        return self._encoded

    @property
    def chat_request(self) -> chat_pb2.ChatRequest:
        """The whole ChatRequest as a message (decoded from the joined bytes)."""
        return chat_pb2.ChatRequest.FromString(self.encoded_chat_request())


MESSAGES_FIELD = chat_pb2.ChatRequest.DESCRIPTOR.fields_by_name["messages"].number


@dataclass(frozen=True)
class _Before:
    """What the round needs before storage: the ChatRequest without messages, its compiled prompt
    filled in; the new entries; the manifest to record."""

    head: chat_pb2.ChatRequest
    new_entries: list[NewEntry]
    manifest: PreparedManifest
    # The tokenizer `new_entries` were counted in: that of the model the thread was last seen with.
    counted_in: str

    @property
    def payload(self) -> prompt_pb2.CompiledPromptPayload:
        return self.head.compiled_prompt


@dataclass(frozen=True)
class _Round:
    model: str
    history: CachedLoad | decide.LoadResult
    current: list[chat_pb2.ChatMessage]
    repairs: list[history_pb2.HistoryDiagnostic]
    # Entries of other turns not completed, left out of history: (entries, turns).
    left_out: tuple[int, int]
    # The batch's entries to create (those the thread does not hold), counted in `tokenizer`.
    created: list[NewEntry]
    tokenizer: str
    # Counts the history's load made in another tokenizer, to keep.
    counts: KeptCounts | None = None
    # Whether `history` was settled before the round (its load observed then).
    settled: bool = False
    # Set by `_finished`, before the commit: the history framed as ChatRequest.messages (in parts
    # to join), and the provider body when the request names a provider.
    framed: tuple[bytes, ...] = ()
    rendered: RenderedBody | None = None
    # Set by `_encoded`, beside the commit: the provider body written as JSON text.
    encoded: RenderedRequest | None = None
    # The thread's DynamicContextPlacement, as its state was read.
    placement: int = 0
    # Set by `_with_break`, before the commit: the round's history report (a copy), what made its
    # body's prefix, and its PrefixBreak against the thread's round before it here (None: it held,
    # or not known).
    report: history_pb2.HistoryDecisionReport | None = None
    prefix: RoundPrefix | None = None
    broke: history_pb2.PrefixBreak | None = None


class _Unsettled(Exception):
    """The round found a history over the threshold: it stops before its commit, to settle it."""

    def __init__(self, over: history_load.OverThreshold) -> None:
        super().__init__("history over the threshold")
        self.over = over


class _ReadWhole(Exception):
    """The kept history could not serve the round after all: open it again, reading the history whole."""


# Times a round is opened again (the thread changed before its commit, a history over the threshold
# was settled, the kept history could not serve) before giving up on a thread that keeps changing.
_ROUND_ATTEMPTS = 8

_BEFORE = chat_pb2.DYNAMIC_CONTEXT_PLACEMENT_BEFORE_CONVERSATION

# Up to these sizes a round's blocking steps run on the event loop rather than hop to a worker
# thread: each is then well under a millisecond, less than the hop. The request's encoded size
# bounds what the checks, hashes and counts look at; the turn's own entries bound what the render
# does each round (the history's part is rendered once and kept); the body's source size bounds
# what its JSON writes. A history read whole is decided in a worker thread.
_ON_LOOP_REQUEST_BYTES = 32 * 1024
_ON_LOOP_OWN_BYTES = 32 * 1024
_ON_LOOP_BODY_BYTES = 2 * 1024 * 1024


def _before_round(
    ctx: ServiceContext,
    request: turn_service_pb2.PrepareTurnRequest,
    entries: list[history_pb2.ConversationEntry],
    head: chat_pb2.ChatRequest,
) -> _Before:
    """Blocking work before storage: compile into `head`, count and hash the new entries, encode the
    manifest."""
    payload = head.compiled_prompt
    with _named_as_request_fields(), ctx.telemetry.span("pioneer.compile") as span:
        hit = ctx.compile_cache.compile_into(
            payload,
            request.compile_input,
            ctx.config.homes,
            thread_id=request.thread_id,
            turn_id=request.turn_id,
        )
        observe.compiled(ctx, span, hit, payload.manifest)
    counted_in = token_fit.likely_tokenizer(
        ctx.models, ctx.load_cache, ctx.seen_models, thread_key(request.thread_id)
    )
    new_entries = [
        NewEntry(entry, content_hash(entry), sum(count_blocking(entry_counted_texts(entry), counted_in)))
        for entry in entries
    ]
    manifest = prepare_manifest(request.thread_id, request.turn_id, payload.manifest)
    return _Before(head, new_entries, manifest, counted_in)


def _ask(
    ctx: ServiceContext, request: turn_service_pb2.PrepareTurnRequest, before: _Before, whole: bool
) -> RoundAsk:
    """What the round reads: the history leaving out its turn (all of it when `whole`), the turn, the
    thread's calls and entries the batch names."""
    thread_id, turn_id = request.thread_id, request.turn_id
    entries = [new.entry for new in before.new_entries]
    history = (
        history_load.whole_ask(thread_id, turn_id)
        if whole
        else history_load.history_ask(ctx, thread_id, turn_id)
    )
    return RoundAsk(
        thread_id,
        turn_id,
        history,
        tuple(named_call_ids(entries)),
        tuple(dict.fromkeys(entry.entry_id for entry in entries)),
    )


def _appended(
    thread_id: str, turn_id: str, new_entries: list[NewEntry], tokenizer: str, opened: OpenedRound
) -> tuple[list[history_pb2.ConversationEntry], list[NewEntry]]:
    """The turn's entries once the batch is appended, as a read gives them, and the batch's entries to
    create; refused as an append refuses them (store/port.py AppendBatch), on what the round read."""
    entries = [new.entry for new in new_entries]
    own = list(opened.turn_entries)
    if not entries:
        return own, []
    stored = StoredCalls()
    stored.turns = {turn_id: list(own)} if own else {}
    wanted = {entry.entry_id for entry in entries}
    stored.stored_entry_ids = {entry.entry_id for entry in own} & wanted
    stored.thread_calls = opened.thread_calls
    if len(stored.stored_entry_ids) < len(wanted):
        InvalidArgument.raise_if(call_violations(entries, stored, "new_entries"))
    first: dict[str, NewEntry] = {}
    for new in new_entries:
        earlier = first.setdefault(new.entry.entry_id, new)
        held = opened.stored.get(new.entry.entry_id)
        if held is not None and held.content_hash != new.content_hash:
            raise entry_conflict(thread_id, held.entry, new.entry)
        if held is None and earlier.content_hash != new.content_hash:
            raise entry_conflict(thread_id, earlier.entry, new.entry)
    created = [new for entry_id, new in first.items() if entry_id not in opened.stored]
    if created and opened.turn is not None and opened.turn.status == history_pb2.TURN_STATUS_COMPLETED:
        raise turn_completed(thread_id, created[0].entry)
    return [*own, *(as_loaded(thread_id, new, tokenizer) for new in created)], created


def _decided(
    ctx: ServiceContext,
    request: turn_service_pb2.PrepareTurnRequest,
    before: _Before,
    opened: OpenedRound,
    settled: history_load.Settled | None,
) -> _Round:
    """Everything the round decides on what `open` read, with no storage in between (the pure cores);
    its provider body rendered, so a body the provider rules refuse stops the round. Blocking."""
    thread_id, turn_id = request.thread_id, request.turn_id
    model = request.model or opened.model
    if not model:
        raise InvalidArgument.field(
            "model", "set the model here or on the thread (UpdateThread)", reason=reasons.MODEL_REQUIRED
        )
    ctx.seen_models.put(thread_key(thread_id), opened.model)
    tokenizer = token_fit.counting_for(ctx.models, opened.model).tokenizer
    new_entries = before.new_entries
    if tokenizer != before.counted_in:  # the thread counts in another tokenizer than the guess
        new_entries = token_fit.recounted(new_entries, tokenizer)
    if new_entries:
        with ctx.telemetry.span(
            "pioneer.history.append",
            {tracing.THREAD_ID: thread_id, tracing.ENTRIES_APPENDED: len(new_entries)},
        ):
            own, created = _appended(thread_id, turn_id, new_entries, tokenizer, opened)
    else:
        own, created = list(opened.turn_entries), []
    # The turn's own entries, repaired like history; its latest calls must have their results.
    repaired = repair(own, close_at_end=False)
    current = [to_chat_message(entry) for entry in repaired.entries]
    if repaired.pending:
        raise _pending_error(turn_id, repaired.pending)  # before the commit: nothing is stored
    history, counts = history_load.history_of(ctx, thread_id, turn_id, opened.history, settled)
    if history is None:
        raise _ReadWhole
    if isinstance(history, history_load.OverThreshold):
        raise _Unsettled(history)  # before the commit; prepare_turn settles it and runs the round again
    done = _Round(
        model,
        history,
        current,
        repaired.diagnostics,
        opened.history.left_out,
        created,
        tokenizer,
        counts,
        settled is not None and history is settled.result,
        placement=opened.history.state.dynamic_context_placement,
    )
    return _finished(ctx, request, before.head, done)


def _render_options(
    request: turn_service_pb2.PrepareTurnRequest, placement: int
) -> provider_service_pb2.RenderOptions:
    """The round's render options: the request's, the thread's placement of the dynamic half where
    the request leaves it unset, and the thread's id for OpenAI's prompt_cache_key."""
    given = request.render_options
    if given.dynamic_context_placement and given.HasField("prompt_cache_thread_id"):
        return given
    options = provider_service_pb2.RenderOptions()
    options.CopyFrom(given)
    if not options.dynamic_context_placement:
        options.dynamic_context_placement = placement  # type: ignore[assignment]
    if not options.HasField("prompt_cache_thread_id"):
        options.prompt_cache_thread_id = request.thread_id
    return options


def _finished(
    ctx: ServiceContext,
    request: turn_service_pb2.PrepareTurnRequest,
    head: chat_pb2.ChatRequest,
    done: _Round,
) -> _Round:
    """The round with its history framed and its provider body rendered, before the commit, so a
    body the provider rules refuse stores nothing.

    The history's part of the body (checked, paired, adapted, rendered) is kept with the
    cached load and shared by every round until the history changes; only the turn's own
    messages are rendered each round (providers/prefix.py says when that gives the body
    rendered from scratch, and render_after falls back to it).
    """
    history = done.history
    if isinstance(history, CachedLoad):
        framed = history.framed_parts(MESSAGES_FIELD)
    else:
        framed = (repeated_records(MESSAGES_FIELD, (m.SerializeToString() for m in history.messages)),)
    if request.provider == provider_service_pb2.PROVIDER_UNSPECIFIED:
        return replace(done, framed=framed)
    own = chat_pb2.ChatRequest()
    own.CopyFrom(head)
    own.model = done.model
    own.messages.extend(done.current)

    def whole() -> chat_pb2.ChatRequest:
        """The whole ChatRequest: the head's fields, the history, the turn's own messages."""
        current = repeated_records(MESSAGES_FIELD, (m.SerializeToString() for m in done.current))
        head_only = chat_pb2.ChatRequest()
        head_only.CopyFrom(head)
        head_only.model = done.model
        return chat_pb2.ChatRequest.FromString(b"".join([head_only.SerializeToString(), *framed, current]))

    path = "chat_request"
    cached = history if isinstance(history, CachedLoad) else None
    prefix = (
        cached.rendered_prefix(request.provider, path, render_prefix, extend_prefix, slide_prefix, cut_prefix)
        if cached is not None
        else None
    )
    attributes = observe.render_attributes(ctx, request.provider, done.model)
    with _named_as_request_fields(), ctx.telemetry.span("pioneer.provider.render", attributes):
        rendered = render_after(
            prefix,
            request.provider,
            own,
            whole,
            _render_options(request, done.placement),
            # The whole request's encoded size, without joining it.
            source_bytes=own.ByteSize() + sum(map(len, framed)),
            path=path,
            options_path="render_options",
            models=ctx.models,
        )
    # Notices name the request's own fields, as violations do.
    notices = tuple(replace(n, field=_own_field(n.field)) for n in rendered.notices)
    return replace(done, framed=framed, rendered=replace(rendered, notices=notices))


def _report_of(history: CachedLoad | decide.LoadResult) -> history_pb2.HistoryDecisionReport:
    return history.result.report if isinstance(history, CachedLoad) else history.report


def _with_break(
    ctx: ServiceContext,
    request: turn_service_pb2.PrepareTurnRequest,
    head: chat_pb2.ChatRequest,
    done: _Round,
) -> _Round:
    """The round with its history report (copied: a load's answer is shared between rounds, and a
    round may run again) and its PrefixBreak, before its commit, which puts both on the timeline."""
    report = history_pb2.HistoryDecisionReport()
    report.CopyFrom(_report_of(done.history))
    report.diagnostics.extend(done.repairs)
    # As LoadConversationHistory says: other turns not completed are left out of history.
    report.diagnostics.extend(history_load.left_out(*done.left_out))
    head.model = done.model
    placement = _render_options(request, done.placement).dynamic_context_placement
    dynamic_before = placement == _BEFORE
    current = prefix_breaks.round_prefix(request, head, done.model, dynamic_before, done.history, report)
    key = (request.turn_id, len(done.current))
    broke = prefix_breaks.observed(ctx.round_prefixes, thread_key(request.thread_id), key, current)
    if broke is not None:
        report.prefix_break.CopyFrom(broke)
    return replace(done, report=report, prefix=current, broke=broke)


def _prepared(request: turn_service_pb2.PrepareTurnRequest, done: _Round) -> RoundPrepared:
    """The round's row on the thread's timeline, as its commit writes it."""
    decision = 0 if done.report is None else done.report.decision
    return round_usage.prepared_round(len(done.current), request.provider, done.model, decision, done.broke)


async def _committed_round(
    ctx: ServiceContext, request: turn_service_pb2.PrepareTurnRequest, before: _Before
) -> tuple[_Round, Recorded]:
    """The round, opened and committed; opened again when the thread changed before the commit, after
    settling a history over the threshold, or to read the history whole. Its event handed to the
    live observers once committed."""
    settled: history_load.Settled | None = None
    whole = False
    small = request.ByteSize() <= _ON_LOOP_REQUEST_BYTES
    for _ in range(_ROUND_ATTEMPTS):
        opened = await ctx.store.rounds.open(_ask(ctx, request, before, whole))
        own_bytes = sum(entry.ByteSize() for entry in opened.turn_entries) + request.ByteSize()
        off_loop = not small or own_bytes > _ON_LOOP_OWN_BYTES or opened.history.whole is not None
        try:
            done = await history_load.blocking(
                partial(_decided, ctx, request, before, opened, settled), off_loop=off_loop
            )
        except _ReadWhole:
            whole = True
            continue
        except _Unsettled as unsettled:
            with ctx.telemetry.span("pioneer.history.load", {tracing.THREAD_ID: request.thread_id}) as span:
                settled = await history_load.settle(ctx, request.thread_id, request.turn_id, unsettled.over)
                observe.history_loaded(ctx, span, _report_of(settled.result))
            continue
        with ctx.telemetry.span("pioneer.manifest.record") as span:
            committed = await _committed(ctx, request, before, opened, done)
            if committed is None:
                continue  # the thread changed since the round was opened: nothing was written
            done, recorded = committed
            if span.is_recording():
                span.set_attributes(
                    {
                        tracing.FINGERPRINT_STABLE: before.payload.manifest.fingerprint_stable,
                        tracing.MANIFEST_EVENT_ID: recorded.event_id,
                    }
                )
        observe.published(ctx, recorded)
        ctx.telemetry.metrics.failed_tool_results(sum(1 for new in done.created if new.entry.is_error))
        return done, recorded
    raise Aborted(
        f"the history of thread {request.thread_id!r} kept changing while this round was made; "
        "nothing of this request was stored: send it again"
    )


async def _committed(
    ctx: ServiceContext,
    request: turn_service_pb2.PrepareTurnRequest,
    before: _Before,
    opened: OpenedRound,
    done: _Round,
) -> tuple[_Round, Recorded] | None:
    """The round's one commit, the body written as JSON beside it; None on a Conflict. The section
    texts the thread may not have kept go with it (service/section_texts.py), and the round's row
    on the thread's timeline with its prefix break (kept as the thread's last round once
    committed)."""
    texts = section_texts.unknown(ctx, request.thread_id, before.payload.sections)
    done = _with_break(ctx, request, before.head, done)
    plan = RoundCommit(
        request.thread_id,
        request.turn_id,
        opened.version,
        None if opened.turn is None else opened.turn.status,
        before.manifest,
        done.created,
        done.tokenizer,
        opens_turn=not opened.turn_entries,
        counts=done.counts,
        texts=texts,
        round=_prepared(request, done),
    )
    under_way = ctx.store.rounds.commit(plan)
    await under_way.sent
    if done.rendered is not None:
        small = done.rendered.source_bytes <= _ON_LOOP_BODY_BYTES
        encoded = done.rendered.encoded() if small else await asyncio.to_thread(done.rendered.encoded)
        done = replace(done, encoded=encoded)
    outcome = await under_way
    if isinstance(outcome, Conflict):
        return None
    section_texts.kept(ctx, request.thread_id, texts)
    assert done.prefix is not None
    key = (request.turn_id, len(done.current))
    ctx.round_prefixes.swap(thread_key(request.thread_id), key, done.prefix)
    return done, outcome


async def prepare_turn(ctx: ServiceContext, request: turn_service_pb2.PrepareTurnRequest) -> PreparedTurn:
    observe.turn_started(ctx, request.thread_id, request.turn_id, request.model)
    usage = request.previous_round_usage if request.HasField("previous_round_usage") else None
    if usage is not None:  # checked before anything is stored
        InvalidArgument.raise_if(round_usage.usage_violations(usage, "previous_round_usage"))
        await round_usage.turn_has_round(ctx, request.thread_id, request.turn_id)
    await quotas.check_stored(ctx, request.thread_id, request.new_entries)
    small = request.ByteSize() <= _ON_LOOP_REQUEST_BYTES
    # A request at its caps is megabytes to check, hash and count: off the event loop.
    before = await history_load.blocking(
        lambda: _before_round(ctx, request, *_checked_request(request, ctx.models)), off_loop=not small
    )
    # Published even when the caller is cancelled meanwhile: the event is committed.
    done, recorded = await to_the_end(_committed_round(ctx, request, before))
    if recorded.event is not None:
        # Counted once committed; a retry that recorded nothing new is not another round.
        observe.manifest_recorded(ctx, request.thread_id, before.payload.manifest)
    if not request.model:
        observe.model_chosen(ctx, done.model)  # the thread's
    report = done.report
    assert report is not None  # made before the commit (`_with_break`)
    if not done.settled:
        with ctx.telemetry.span("pioneer.history.load", {tracing.THREAD_ID: request.thread_id}) as span:
            observe.history_loaded(ctx, span, report)
    broke = done.broke
    prepared = PreparedTurn(before.head, done.framed, done.current, report, recorded.event_id)
    prepared.rendered = done.encoded
    body = done.rendered
    if body is not None and body.source_bytes > MAX_KEPT_BODY_SOURCE_BYTES:
        body = None
    seen = SeenRound(
        request.turn_id,
        len(done.current),
        recorded.event_id,
        request.provider,
        done.model,
        broke,
        None if body is None else body.body,
        0 if body is None else body.source_bytes,
        history_decision=report.decision,
    )
    previous = ctx.recent_rounds.swap(thread_key(request.thread_id), seen)
    if usage is not None:
        await round_usage.record(ctx, request.thread_id, request.turn_id, previous, usage)
    if ctx.config.keep_rendered_requests:  # off by default: then the round pays nothing for it
        await rendered_rounds.keep(ctx, request, prepared)
    return prepared
