"""What the use cases tell the telemetry: span attributes and metrics of a round's steps.

Only ids, decisions, counts and fingerprints: never content. Each helper is cheap
when telemetry is off (an inert span records nothing; NoMetrics does nothing).
"""

from __future__ import annotations

from opentelemetry.trace import Span

from pioneer_grpc.providers.specs import spec_for
from pioneer_grpc.service import quotas
from pioneer_grpc.service.context import ServiceContext
from pioneer_grpc.service.ending import to_the_end
from pioneer_grpc.store.manifests import prepare_manifest
from pioneer_grpc.store.port import Recorded
from pioneer_grpc.telemetry import tracing
from pioneer_grpc.v1 import history_pb2, prompt_pb2


def _provider_name(provider: int) -> str:
    """gen_ai.provider.name: a well-known value of the GenAI semantic conventions (the spec's)."""
    spec = spec_for(provider)
    return "unknown" if spec is None else spec.telemetry_name


def _enum_word(name: str, prefix: str) -> str:
    return name.removeprefix(prefix).lower()


def decision_name(report: history_pb2.HistoryDecisionReport) -> str:
    return _enum_word(history_pb2.HistoryDecision.Name(report.decision), "HISTORY_DECISION_")


def turn_started(ctx: ServiceContext, thread_id: str, turn_id: str, model: str = "") -> None:
    """Names the round on the RPC's span."""
    if not ctx.telemetry.tracing:
        return
    span = ctx.telemetry.current_span()
    if span.is_recording():
        attributes = {tracing.THREAD_ID: thread_id, tracing.CONVERSATION_ID: thread_id}
        if turn_id:
            attributes[tracing.TURN_ID] = turn_id
        if model:
            attributes[tracing.REQUEST_MODEL] = model
        span.set_attributes(attributes)


def model_chosen(ctx: ServiceContext, model: str) -> None:
    """The model of a round that did not name one (the thread's), on the RPC's span."""
    if ctx.telemetry.tracing and model:
        ctx.telemetry.current_span().set_attribute(tracing.REQUEST_MODEL, model)


def compiled(ctx: ServiceContext, span: Span, hit: bool, manifest: prompt_pb2.PromptManifest) -> None:
    if not ctx.telemetry.enabled:
        return
    ctx.telemetry.metrics.compile_cache(hit)
    if span.is_recording():
        span.set_attributes(
            {
                tracing.COMPILE_CACHE: "hit" if hit else "miss",
                tracing.FINGERPRINT_STABLE: manifest.fingerprint_stable,
            }
        )


def history_loaded(ctx: ServiceContext, span: Span, report: history_pb2.HistoryDecisionReport) -> None:
    if not ctx.telemetry.enabled:
        return
    decision = decision_name(report)
    ctx.telemetry.metrics.history_decision(decision)
    ctx.telemetry.metrics.tool_results_cleared(len(report.cleared_tool_results), report.cleared_tokens_saved)
    if span.is_recording():
        span.set_attributes(
            {
                tracing.HISTORY_DECISION: decision,
                tracing.TOKENS_BEFORE: report.tokens_before,
                tracing.TOKENS_AFTER: report.tokens_after,
                tracing.ENTRIES_LOADED: report.entries_loaded,
                tracing.ENTRIES_KEPT: report.entries_kept,
                tracing.SUMMARY_USE: _enum_word(
                    history_pb2.SummaryUse.Name(report.summary_use), "SUMMARY_USE_"
                ),
            }
        )
        if report.cleared_tool_results:
            span.set_attributes(
                {
                    tracing.TOOL_RESULTS_CLEARED: len(report.cleared_tool_results),
                    tracing.CLEARED_TOKENS_SAVED: report.cleared_tokens_saved,
                }
            )
        if report.summarizer:
            span.set_attribute(tracing.SUMMARIZER, report.summarizer)


async def record_manifest(
    ctx: ServiceContext, thread_id: str, turn_id: str, manifest: prompt_pb2.PromptManifest
) -> int:
    """Records the manifest on its turn (an event, handed to the live observers once committed);
    counts the round and names a cache break."""
    if not ctx.telemetry.enabled:
        return await _recorded(ctx, thread_id, turn_id, manifest)
    rpc_span = ctx.telemetry.current_span()
    with ctx.telemetry.span("pioneer.manifest.record") as span:
        event_id = await _recorded(ctx, thread_id, turn_id, manifest)
        if span.is_recording():
            span.set_attributes(
                {tracing.MANIFEST_EVENT_ID: event_id, tracing.FINGERPRINT_STABLE: manifest.fingerprint_stable}
            )
        manifest_recorded(ctx, thread_id, manifest, (span, rpc_span))
    return event_id


async def _recorded(
    ctx: ServiceContext, thread_id: str, turn_id: str, manifest: prompt_pb2.PromptManifest
) -> int:
    """The thread and the turn created when missing. A caller cancelled meanwhile still has its
    committed event handed to the live observers before it sees the cancellation, not at the hub's
    next poll."""
    prepared = prepare_manifest(thread_id, turn_id, manifest)
    await quotas.check_new_thread(ctx, thread_id)

    async def committed() -> int:
        recorded = await ctx.store.manifests.record(prepared)
        published(ctx, recorded)
        return recorded.event_id

    return await to_the_end(committed())


def published(ctx: ServiceContext, recorded: Recorded) -> None:
    """Hands a committed new event to the live observers (nothing for a repeat)."""
    if recorded.event is not None:
        ctx.hub.publish(recorded.event)


def manifest_recorded(
    ctx: ServiceContext,
    thread_id: str,
    manifest: prompt_pb2.PromptManifest,
    spans: tuple[Span, ...] | None = None,
) -> None:
    """A manifest was recorded: count the round, name a cache break on the spans (default: the RPC's)."""
    observed = ctx.telemetry.round_recorded(thread_id, manifest)
    if observed is None or observed.first:
        return
    broke = bool(observed.break_section_id)
    for target in spans or (ctx.telemetry.current_span(),):
        if target.is_recording():
            target.set_attribute(tracing.CACHE_BREAK, broke)
            if broke:
                target.set_attribute(tracing.CACHE_BREAK_SECTION, observed.break_section_id)


def render_attributes(ctx: ServiceContext, provider: int, model: str) -> dict[str, str] | None:
    if not ctx.telemetry.tracing:
        return None
    return {tracing.PROVIDER_NAME: _provider_name(provider), tracing.REQUEST_MODEL: model}
