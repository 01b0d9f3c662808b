"""PrepareTurn: one call per provider round for an agent loop.

Order matters for "nothing stored on bad input": everything that can be
rejected without the database (the compile input, the entries, the tools) is
checked first; the compile and the new entries' token counts (in the tokenizer of
the thread's model as its kept history last saw it, else cl100k_base) run before
the transaction (on SQLite in the store's own thread, see store/runner.py). Then
one transaction: lock the thread (its model), lock or create the turn, read the
turn's own entries so far, check the batch's tool calls against the store and
append (counted again first when the model's tokenizer is another one), load the
budgeted history leaving out the turn in progress (the kept one,
brought current by the turns completed since: service/history_current.py), and
record the manifest (the turn's existing event when it already holds this same
manifest); then, still before the commit and off the event loop (the runner's
`then`), render the provider body. A rejection anywhere in it rolls everything
back: a turn whose latest tool calls have no result yet (FAILED_PRECONDITION), a
body the provider rules refuse (INVALID_ARGUMENT). A failed round stores nothing
and publishes no event. Only the body's encoding (the bulk of a large body's
bytes, which cannot fail) is left for after the commit, out of the thread's lock.

A history over the threshold is settled (cleared, truncated or compressed, as a
load would) between two attempts of the transaction: the first rolls back when
it finds one, the history is settled outside any transaction (a summarizer may
be asked), and the round runs again with that answer while the thread's history
is still the one it settled.

The history comes back encoded, shared between rounds while the thread's
history is unchanged and extended (not encoded again) when turns complete; the
ChatRequest is written as its small fields joined with those bytes, never as 200
messages copied and encoded again.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from functools import partial

from sqlalchemy.engine import Connection

from pioneer_grpc import reasons
from pioneer_grpc.caps import violations_of
from pioneer_grpc.compiler.validate import input_violations, known_valid
from pioneer_grpc.errors import Aborted, FailedPrecondition, FieldViolation, InvalidArgument
from pioneer_grpc.events.recorder import (
    PreparedManifest,
    Recorded,
    id_setting,
    numbered,
    prepare_manifest,
)
from pioneer_grpc.events.round_opened import round_opened
from pioneer_grpc.history import decide
from pioneer_grpc.history.entries import content_hash, entry_violations, id_violation
from pioneer_grpc.history.entry_rules import StoredCalls, call_violations, content_violations, named_call_ids
from pioneer_grpc.history.render import entry_counted_texts, to_chat_message
from pioneer_grpc.history.repair import repair
from pioneer_grpc.history.tokens import count_blocking
from pioneer_grpc.models.registry import Registry
from pioneer_grpc.providers.prefix import cut_prefix, extend_prefix, render_prefix, slide_prefix
from pioneer_grpc.providers.render import RenderedBody, RenderedRequest, render_after
from pioneer_grpc.providers.validate import tool_rule_violations
from pioneer_grpc.remembered import Remembered
from pioneer_grpc.service import history_load, observe, prefix_breaks, rendered_rounds, token_fit
from pioneer_grpc.service.context import ServiceContext
from pioneer_grpc.service.load_cache import CachedLoad
from pioneer_grpc.store import append as append_store
from pioneer_grpc.store import entries as entry_store
from pioneer_grpc.store import round as round_store
from pioneer_grpc.store.runner import OnLoop
from pioneer_grpc.store.work import run_to_end
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
    head_key = b"%d:%d:" % (request.provider, id(models)) + head.SerializeToString(deterministic=True)
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
    """What the round needs before its transaction: the ChatRequest without messages, its compiled
    prompt filled in; the new entries; the manifest to record."""

    head: chat_pb2.ChatRequest
    new_entries: list[entry_store.NewEntry]
    manifest: PreparedManifest
    # The tokenizer `new_entries` were counted in: that of `counted_model` (None: cl100k_base),
    # the model the thread was last seen with.
    counted_in: str
    counted_model: str | None

    @property
    def payload(self) -> prompt_pb2.CompiledPromptPayload:
        return self.head.compiled_prompt


@dataclass(frozen=True)
class _Round:
    model: str
    history: CachedLoad | decide.LoadResult
    current: list[chat_pb2.ChatMessage]
    repairs: list[history_pb2.HistoryDiagnostic]
    recorded: Recorded
    # Entries of other turns not completed, left out of history: (entries, turns).
    left_out: tuple[int, int] = (0, 0)
    # Whether `history` was settled before the transaction (its load observed then).
    settled: bool = False
    # Set by `_finished`, before the commit: the history framed as ChatRequest.messages (in parts
    # to join), and the provider body when the request names a provider.
    framed: tuple[bytes, ...] = ()
    rendered: RenderedBody | None = None
    # Set by `_encoded`, beside the commit: the provider body written as JSON text.
    encoded: RenderedRequest | None = None
    # The thread's DynamicContextPlacement, as its state was read.
    placement: int = 0


class _Unsettled(Exception):
    """The round found a history over the threshold: rolled back, to settle it outside the transaction."""

    def __init__(self, over: history_load.OverThreshold) -> None:
        super().__init__("history over the threshold")
        self.over = over


_BEFORE = chat_pb2.DYNAMIC_CONTEXT_PLACEMENT_BEFORE_CONVERSATION

# Times a round settles a history over the threshold before giving up on a thread that keeps changing.
_SETTLE_ATTEMPTS = 3

# Up to these sizes a round's blocking steps run on the event loop rather than hop to a worker
# thread (store/runner.py, OnLoop; `prepare` and `then` on PostgreSQL only): each is then well
# under a millisecond, less than the hop. The request's encoded size bounds what `prepare` checks,
# hashes and counts; the turn's own messages bound what `then` renders (the history's part is
# rendered once and kept); the body's source size bounds what `beside` writes as JSON.
_ON_LOOP_REQUEST_BYTES = 32 * 1024
_ON_LOOP_OWN_BYTES = 32 * 1024
_ON_LOOP_BODY_BYTES = 2 * 1024 * 1024


def _on_loop(request: turn_service_pb2.PrepareTurnRequest) -> OnLoop[_Round]:
    def then(done: _Round) -> bool:
        return sum(m.ByteSize() for m in done.current) <= _ON_LOOP_OWN_BYTES

    def beside(done: _Round) -> bool:
        return done.rendered is None or done.rendered.source_bytes <= _ON_LOOP_BODY_BYTES

    return OnLoop(request.ByteSize() <= _ON_LOOP_REQUEST_BYTES, then, beside)


def _before_round(
    ctx: ServiceContext,
    request: turn_service_pb2.PrepareTurnRequest,
    entries: list[history_pb2.ConversationEntry],
    head: chat_pb2.ChatRequest,
) -> _Before:
    """Blocking work before the transaction: compile into `head`, count and hash the new entries,
    encode the manifest."""
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
    counted_model = token_fit.likely_model(ctx.load_cache, request.thread_id)
    counted_in = token_fit.likely_tokenizer(ctx.models, ctx.load_cache, request.thread_id)
    new_entries = [
        entry_store.NewEntry(
            entry, content_hash(entry), sum(count_blocking(entry_counted_texts(entry), counted_in))
        )
        for entry in entries
    ]
    manifest = prepare_manifest(request.thread_id, request.turn_id, payload.manifest)
    return _Before(head, new_entries, manifest, counted_in, counted_model)


def _round(
    ctx: ServiceContext,
    request: turn_service_pb2.PrepareTurnRequest,
    settled: history_load.Settled | None,
    conn: Connection,
    before: _Before,
) -> _Round:
    """Every read and write of the round, in one transaction (store/round.py says the order)."""
    thread_id, turn_id = request.thread_id, request.turn_id
    entries = [new.entry for new in before.new_entries]
    # Counted before the transaction in the tokenizer of the model the thread was last seen with.
    batch = append_store.batch_of(thread_id, before.new_entries, before.counted_in) if entries else None
    with ctx.telemetry.span("pioneer.manifest.record") as span:
        # The thread locked with the history's state (read before the turn's writes, which change
        # nothing it reads: the turn's own entries are not completed, and it leaves out their turn),
        # then the turn locked with its entries and the manifest recorded on it: one statement on
        # PostgreSQL, which inserts the batch too; what follows and fails rolls all back.
        opened = round_opened(
            conn,
            before.manifest,
            history_load.kept_through(ctx, thread_id),
            named_call_ids(entries),
            batch,
            before.counted_model,
            postgres=ctx.manifests.postgres,
        )
        recorded = opened.recorded
        if span.is_recording():
            span.set_attribute(tracing.FINGERPRINT_STABLE, before.payload.manifest.fingerprint_stable)
            if recorded.event_id > 0:  # else PostgreSQL draws it at commit; the RPC's span gets it
                span.set_attribute(tracing.MANIFEST_EVENT_ID, recorded.event_id)
    read, turn = opened.read, opened.turn
    model = request.model or read.state.model
    if not model:
        raise InvalidArgument.field(
            "model", "set the model here or on the thread (UpdateThread)", reason=reasons.MODEL_REQUIRED
        )
    batch = token_fit.in_thread_tokenizer(
        ctx.models, thread_id, read.state.model, batch, before.counted_in, opened.inserted
    )
    own = list(turn.entries)

    def check(stored: StoredCalls) -> None:
        InvalidArgument.raise_if(call_violations(entries, stored, "new_entries"))

    if batch is not None:
        with ctx.telemetry.span(
            "pioneer.history.append", {tracing.THREAD_ID: thread_id, tracing.ENTRIES_APPENDED: len(entries)}
        ):
            own += round_store.insert_turn_entries(
                conn, thread_id, turn_id, batch, check, turn, opened.inserted
            )
    # The turn's own entries, repaired like history; its latest calls must have their results.
    repaired = repair(own, close_at_end=False)
    current = [to_chat_message(entry) for entry in repaired.entries]
    if repaired.pending:
        raise _pending_error(turn_id, repaired.pending)  # rolls the round back: nothing is stored
    history, left_out = history_load.history_on(ctx, conn, thread_id, turn_id, settled, read)
    if isinstance(history, history_load.OverThreshold):
        raise _Unsettled(history)  # rolls the round back; prepare_turn settles it and runs it again
    is_settled = settled is not None and history is settled.result
    return _Round(
        model,
        history,
        current,
        repaired.diagnostics,
        recorded,
        left_out,
        is_settled,
        placement=read.state.dynamic_context_placement,
    )


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
    """The round with its history framed and its provider body rendered: the runner's `then`, before
    the commit and off the event loop, so a body the provider rules refuse rolls the round back.

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


async def _committed_round(
    ctx: ServiceContext,
    request: turn_service_pb2.PrepareTurnRequest,
    prepare: Callable[[], _Before],
    then: Callable[[_Round], _Round],
) -> tuple[_Round, str | None]:
    """The round's transaction, committed; run again after settling a history over the threshold."""
    settled: history_load.Settled | None = None
    on_loop = _on_loop(request)
    for attempt in range(_SETTLE_ATTEMPTS + 1):
        try:
            done, committed_id = await ctx.runner.transact(
                prepare,
                partial(_round, ctx, request, settled),
                _event_id_setting,
                then=then,
                beside=_encoded,
                on_loop=on_loop,
            )
            return done, committed_id
        except _Unsettled as unsettled:
            if attempt == _SETTLE_ATTEMPTS:
                raise Aborted(
                    f"the history of thread {request.thread_id!r} kept changing while this round settled it; "
                    "nothing of this request was stored: send it again"
                ) from None
            with ctx.telemetry.span("pioneer.history.load", {tracing.THREAD_ID: request.thread_id}) as span:
                settled = await history_load.settle(ctx, request.thread_id, request.turn_id, unsettled.over)
                observe.history_loaded(ctx, span, _report_of(settled.result))
    raise AssertionError("unreachable: the last attempt returns or raises")


def _encoded(done: _Round) -> _Round:
    """The runner's `beside`: the body written as JSON text while the round commits (the bulk of a
    large body, so out of the transaction; it cannot fail)."""
    return done if done.rendered is None else replace(done, encoded=done.rendered.encoded())


def _event_id_setting(done: _Round) -> str:
    return id_setting(done.recorded)


async def prepare_turn(ctx: ServiceContext, request: turn_service_pb2.PrepareTurnRequest) -> PreparedTurn:
    observe.turn_started(ctx, request.thread_id, request.turn_id, request.model)
    before: list[_Before] = []

    def prepare() -> _Before:
        # Off the event loop: a request at its caps is megabytes to check, hash and count.
        if not before:  # once, though a round over the threshold runs its transaction again
            before.append(_before_round(ctx, request, *_checked_request(request, ctx.models)))
        return before[0]

    def then(done: _Round) -> _Round:
        return _finished(ctx, request, before[0].head, done)

    async def committed() -> tuple[_Round, Recorded]:
        # Published even when the caller is cancelled meanwhile: the event is committed.
        done, committed_id = await _committed_round(ctx, request, prepare, then)
        recorded = numbered(done.recorded, committed_id)
        ctx.manifests.published(recorded)
        return done, recorded

    done, recorded = await run_to_end(committed())
    if recorded is not done.recorded:
        ctx.telemetry.current_span().set_attribute(tracing.MANIFEST_EVENT_ID, recorded.event_id)
    if recorded.event is not None:
        # Counted once committed; a retry that recorded nothing new is not another round.
        observe.manifest_recorded(ctx, request.thread_id, before[0].payload.manifest)
    if not request.model:
        observe.model_chosen(ctx, done.model)  # the thread's
    history = done.history
    # A cached load's answer is shared: its report is copied before it is extended.
    report = history.copy().report if isinstance(history, CachedLoad) else history.report
    if not done.settled:
        with ctx.telemetry.span("pioneer.history.load", {tracing.THREAD_ID: request.thread_id}) as span:
            observe.history_loaded(ctx, span, report)
    report.diagnostics.extend(done.repairs)
    # As LoadConversationHistory says: other turns not completed are left out of history.
    report.diagnostics.extend(history_load.left_out(*done.left_out))
    head = before[0].head
    head.model = done.model
    placement = _render_options(request, done.placement).dynamic_context_placement
    current = prefix_breaks.round_prefix(request, head, done.model, placement == _BEFORE, history, report)
    key = (request.turn_id, len(done.current))
    broke = prefix_breaks.observed(ctx.round_prefixes, request.thread_id, key, current)
    if broke is not None:
        report.prefix_break.CopyFrom(broke)
    prepared = PreparedTurn(head, done.framed, done.current, report, recorded.event_id)
    prepared.rendered = done.encoded
    if ctx.config.keep_rendered_requests:  # off by default: then the round pays nothing for it
        await rendered_rounds.keep(ctx, request, prepared)
    return prepared
