"""Checks that run before any rendering: the original's tool rules, then the rest of the request.

Every problem found becomes one FieldViolation; all of them are reported at once.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace

from pioneer_grpc.caps import violations_of
from pioneer_grpc.caps.chat import MAX_MESSAGES
from pioneer_grpc.errors import FieldViolation, InvalidArgument
from pioneer_grpc.models.registry import Registry, packaged_registry
from pioneer_grpc.providers import model_fit, provider_rules
from pioneer_grpc.providers.cache_points import CacheMinimum
from pioneer_grpc.providers.common import (
    DEFAULT_BOUNDARY_MARKER,
    MAX_CACHE_KEY_PREFIX_CHARS,
    Options,
    Prepared,
    Tool,
    anthropic_thinking,
    media_of,
    parse_arguments,
    resolve_media,
    split_compiled,
    take_leading_system,
    tool_name_for_call,
    tool_schema,
)
from pioneer_grpc.providers.conversation import Notice, RenderedPrefix, pair_tool_calls
from pioneer_grpc.providers.spec import ProviderSpec
from pioneer_grpc.providers.specs import REFUSED, spec_for
from pioneer_grpc.remembered import Remembered
from pioneer_grpc.v1 import chat_pb2, provider_service_pb2

CACHE_KEY_PREFIX_RE = re.compile(r"[A-Za-z0-9_.:-]*")
# What a request for a provider the server does not render for is checked against
# (the common rules), so every other violation is still reported with that one.
_NO_SPEC = ProviderSpec(
    provider=provider_service_pb2.PROVIDER_UNSPECIFIED,
    name="unknown",
    telemetry_name="unknown",
    families=frozenset(),
    render=lambda prepared: ({}, 0),
    path=lambda model: "",
)


def resolve_options(
    options: provider_service_pb2.RenderOptions | None,
    path: str = "options",
) -> tuple[Options, list[FieldViolation]]:
    resolved = Options()
    violations: list[FieldViolation] = []
    if options is None:
        return resolved, violations
    if options.HasField("anthropic_min_cache_chars"):
        if options.anthropic_min_cache_chars < 0:
            violations.append(FieldViolation(f"{path}.anthropic_min_cache_chars", "must not be negative"))
        else:
            resolved = replace(resolved, anthropic_min_cache_chars=options.anthropic_min_cache_chars)
    if options.HasField("cache_key_prefix"):
        prefix = options.cache_key_prefix
        if len(prefix) > MAX_CACHE_KEY_PREFIX_CHARS or not CACHE_KEY_PREFIX_RE.fullmatch(prefix):
            violations.append(
                FieldViolation(
                    f"{path}.cache_key_prefix",
                    f"at most {MAX_CACHE_KEY_PREFIX_CHARS} characters of [A-Za-z0-9_.:-]",
                )
            )
        else:
            resolved = replace(resolved, cache_key_prefix=prefix)
    placement = options.dynamic_context_placement
    if placement not in chat_pb2.DynamicContextPlacement.values():
        violations.append(
            FieldViolation(f"{path}.dynamic_context_placement", f"unknown placement {placement}")
        )
    elif placement == chat_pb2.DYNAMIC_CONTEXT_PLACEMENT_BEFORE_CONVERSATION:
        resolved = replace(resolved, dynamic_after=False)
    if options.prompt_cache_thread_id:
        resolved = replace(resolved, cache_thread_id=options.prompt_cache_thread_id)
    return resolved, violations


def cache_minimum(spec: ProviderSpec, registry: Registry, model: str, options: Options) -> CacheMinimum:
    """The smallest prefix a breakpoint may end for `model`: the caller's characters, else the
    registry's minimum in the model's tokens, else DEFAULT_ANTHROPIC_MIN_CACHE_CHARS characters."""
    if options.anthropic_min_cache_chars is not None:
        return CacheMinimum(chars=options.anthropic_min_cache_chars)
    info = registry.lookup(model) if model else None
    if info is None or info.cache_min_tokens is None:
        return CacheMinimum()
    return CacheMinimum(tokens=info.cache_min_tokens, tokenizer=info.tokenizer)


def _check_tools(
    spec: ProviderSpec, request: chat_pb2.ChatRequest, path: str, violations: list[FieldViolation]
) -> list[Tool]:
    max_chars = spec.max_tool_name_chars
    name_re = spec.tool_name
    tools: list[Tool] = []
    seen: dict[str, int] = {}
    for i, tool in enumerate(request.tools):
        field = f"{path}.tools[{i}]"
        if not tool.name:
            violations.append(FieldViolation(f"{field}.name", "must not be empty"))
        elif len(tool.name) > max_chars:
            violations.append(FieldViolation(f"{field}.name", f"longer than {max_chars} characters"))
        elif not name_re.fullmatch(tool.name):
            violations.append(
                FieldViolation(f"{field}.name", f"may contain only [{spec.tool_name_chars}] for {spec.name}")
            )
        elif tool.name in seen:
            violations.append(
                FieldViolation(f"{field}.name", f"duplicate of tools[{seen[tool.name]}].name {tool.name!r}")
            )
        else:
            seen[tool.name] = i
        try:
            schema = tool_schema(tool)
        except ValueError as exc:
            violations.append(FieldViolation(f"{field}.parameters", str(exc)))
            continue
        tools.append(Tool(tool.name, tool.description, schema))
    return tools


def _check_choice(request: chat_pb2.ChatRequest, path: str, violations: list[FieldViolation]) -> None:
    choice = request.tool_choice
    field = f"{path}.tool_choice"
    names = {tool.name for tool in request.tools}
    if choice.mode not in chat_pb2.ToolChoiceMode.values():
        violations.append(FieldViolation(f"{field}.mode", f"unknown mode {choice.mode}"))
    elif choice.mode == chat_pb2.TOOL_CHOICE_MODE_TOOL:
        if not choice.tool_name:
            violations.append(FieldViolation(f"{field}.tool_name", "required with TOOL_CHOICE_MODE_TOOL"))
        elif choice.tool_name not in names:
            violations.append(
                FieldViolation(f"{field}.tool_name", f"no tool named {choice.tool_name!r} in tools")
            )
    elif choice.tool_name:
        violations.append(FieldViolation(f"{field}.tool_name", "only used with TOOL_CHOICE_MODE_TOOL"))
    elif choice.mode == chat_pb2.TOOL_CHOICE_MODE_REQUIRED and not request.tools:
        violations.append(
            FieldViolation(f"{field}.mode", "TOOL_CHOICE_MODE_REQUIRED needs at least one tool")
        )


def _check_message(
    spec: ProviderSpec, request: chat_pb2.ChatRequest, index: int, path: str, violations: list[FieldViolation]
) -> None:
    message = request.messages[index]
    field = f"{path}.messages[{index}]"
    role = message.role
    if role not in (
        chat_pb2.CHAT_ROLE_SYSTEM,
        chat_pb2.CHAT_ROLE_USER,
        chat_pb2.CHAT_ROLE_ASSISTANT,
        chat_pb2.CHAT_ROLE_TOOL,
    ):
        violations.append(FieldViolation(f"{field}.role", "must be system, user, assistant or tool"))
        return
    if role == chat_pb2.CHAT_ROLE_TOOL:
        if not message.tool_call_id:
            violations.append(FieldViolation(f"{field}.tool_call_id", "required on a tool message"))
        elif spec.result_needs_name and not tool_name_for_call(request, index):
            violations.append(
                FieldViolation(
                    f"{field}.name", f"{spec.name} needs the tool name: set it or answer an earlier call"
                )
            )
    if message.tool_calls and role != chat_pb2.CHAT_ROLE_ASSISTANT:
        violations.append(FieldViolation(f"{field}.tool_calls", "only assistant messages call tools"))
    _check_tool_calls(spec, message, field, violations)
    has_media = _check_parts(message, field, violations)
    # Whitespace alone is empty: Anthropic refuses text blocks without non-whitespace text.
    has_text = bool(
        message.content.strip() or message.artifact_refs or any(p.text.strip() for p in message.content_parts)
    )
    if role != chat_pb2.CHAT_ROLE_TOOL and not (has_text or has_media or message.tool_calls):
        violations.append(FieldViolation(f"{field}.content", "message is empty"))


def _check_tool_calls(
    spec: ProviderSpec, message: chat_pb2.ChatMessage, field: str, violations: list[FieldViolation]
) -> None:
    for j, call in enumerate(message.tool_calls):
        call_field = f"{field}.tool_calls[{j}]"
        if not call.id:
            violations.append(FieldViolation(f"{call_field}.id", "must not be empty"))
        if not call.name:
            violations.append(FieldViolation(f"{call_field}.name", "must not be empty"))
        # OpenAI takes arguments as text and documents that a model may produce
        # invalid JSON, so its history may hold such text; the others take an object.
        if spec.parsed_arguments:
            try:
                parse_arguments(call.arguments)
            except ValueError as exc:
                violations.append(FieldViolation(f"{call_field}.arguments", str(exc)))


def _check_parts(message: chat_pb2.ChatMessage, field: str, violations: list[FieldViolation]) -> bool:
    """Checks each content part; True when the message carries media."""
    has_media = False
    for j, part in enumerate(message.content_parts):
        media = media_of(part)
        if media is None:
            if part.WhichOneof("part") is None:
                violations.append(FieldViolation(f"{field}.content_parts[{j}]", "empty content part"))
            continue
        kind, media_part = media
        has_media = True
        if message.role not in (chat_pb2.CHAT_ROLE_USER, chat_pb2.CHAT_ROLE_TOOL):
            violations.append(
                FieldViolation(
                    f"{field}.content_parts[{j}].{kind}", "only user and tool messages carry media"
                )
            )
            continue
        try:
            resolve_media(kind, media_part)
        except ValueError as exc:
            violations.append(FieldViolation(f"{field}.content_parts[{j}].{kind}", str(exc)))
    return has_media


def _check_reasoning(
    spec: ProviderSpec,
    request: chat_pb2.ChatRequest,
    path: str,
    violations: list[FieldViolation],
    sent: bool = True,
) -> None:
    reasoning = request.reasoning
    field = f"{path}.reasoning"
    if reasoning.effort not in chat_pb2.ReasoningEffort.values():
        violations.append(FieldViolation(f"{field}.effort", f"unknown effort {reasoning.effort}"))
    if reasoning.disabled and (reasoning.effort or reasoning.HasField("budget_tokens")):
        violations.append(FieldViolation(f"{field}.disabled", "conflicts with effort or budget_tokens"))
        return
    if reasoning.HasField("budget_tokens") and reasoning.budget_tokens < 0:
        violations.append(FieldViolation(f"{field}.budget_tokens", "must not be negative"))
        return
    minimum = spec.min_thinking_budget
    if not sent or minimum is None or (request.HasField("max_tokens") and request.max_tokens <= 0):
        return
    budget, max_tokens = anthropic_thinking(request)
    if budget is None:
        return
    explicit = reasoning.HasField("budget_tokens")
    if budget < minimum:
        where = f"{field}.budget_tokens" if explicit else f"{path}.max_tokens"
        violations.append(
            FieldViolation(
                where,
                f"{spec.name} extended thinking needs a budget of at least {minimum} tokens, "
                "below max_tokens",
            )
        )
    elif budget >= max_tokens:
        violations.append(FieldViolation(f"{field}.budget_tokens", f"{spec.name} needs it below max_tokens"))


def message_checks(spec: ProviderSpec, request: chat_pb2.ChatRequest, path: str) -> list[FieldViolation]:
    """The checks of each message on its own (and on the messages before it)."""
    violations: list[FieldViolation] = []
    for index in range(len(request.messages)):
        _check_message(spec, request, index, path, violations)
    return violations


@dataclass(frozen=True)
class _HeadChecks:
    """What `prepare` finds in a request's own fields (all but its messages and compiled prompt)."""

    spec: ProviderSpec
    # Violations before the messages' (the provider, tools, tool choice, options, model) and after
    # them (max_tokens, temperature, reasoning, the provider's and the model's rules).
    first: tuple[FieldViolation, ...]
    later: tuple[FieldViolation, ...]
    tools: tuple[Tool, ...]
    resolved: Options
    fit: model_fit.ModelFit
    minimum: CacheMinimum


@dataclass(frozen=True)
class _Head:
    # The caps of the request's own fields (but the compiled prompt's), and the options'.
    over: tuple[FieldViolation, ...]
    options_over: tuple[FieldViolation, ...]
    # None when over a cap: nothing more is looked at.
    checks: _HeadChecks | None


# By the request's own fields, encoded, with the provider, the paths and the options: an agent loop
# renders the same model, tools and options every round, with other messages.
_heads: Remembered[_Head] = Remembered(2 * 1024 * 1024)


def _head_checked(
    provider: int,
    request: chat_pb2.ChatRequest,
    options: provider_service_pb2.RenderOptions | None,
    path: str,
    options_path: str,
    registry: Registry,
) -> _Head:
    """The checks of the request's own fields, worked out once for the same fields (and registry)."""
    own = provider_rules.without_fields(request, ("messages", "compiled_prompt"))
    encoded = own.SerializeToString(deterministic=True)
    key = b"\0".join(
        [
            b"%d:%d:" % (provider, len(encoded)) + registry.key,
            path.encode(),
            options_path.encode(),
            encoded,
            b"" if options is None else b"o" + options.SerializeToString(deterministic=True),
        ]
    )
    found = _heads.get(key)
    if found is None:
        found = _checked_head(provider, own, options, path, options_path, registry)
        _heads.put(key, found)
    return found


def _checked_head(
    provider: int,
    request: chat_pb2.ChatRequest,
    options: provider_service_pb2.RenderOptions | None,
    path: str,
    options_path: str,
    registry: Registry,
) -> _Head:
    over = tuple(violations_of(request, path))
    options_over = tuple(violations_of(options, options_path)) if options else ()
    if over or options_over:
        return _Head(over, options_over, None)
    violations: list[FieldViolation] = []
    found = spec_for(provider)
    if found is None:
        violations.append(FieldViolation("provider", REFUSED.get(provider, "must name a provider API")))
    spec = found or _NO_SPEC
    takes = model_fit.takes_for(spec, registry, request.model)
    tools = _check_tools(spec, request, path, violations)
    _check_choice(request, path, violations)
    resolved, option_violations = resolve_options(options, options_path)
    violations.extend(option_violations)
    minimum = cache_minimum(spec, registry, request.model, resolved)
    if not request.model:
        violations.append(FieldViolation(f"{path}.model", "must not be empty"))
    elif spec.model_id is not None and not spec.model_id.fullmatch(request.model):
        violations.append(FieldViolation(f"{path}.model", f"a {spec.name} model id: {spec.model_id.pattern}"))
    later: list[FieldViolation] = []
    if request.HasField("max_tokens") and request.max_tokens <= 0:
        later.append(FieldViolation(f"{path}.max_tokens", "must be positive"))
    if request.HasField("temperature") and not (
        math.isfinite(request.temperature) and request.temperature >= 0
    ):
        later.append(FieldViolation(f"{path}.temperature", "must be a finite number >= 0"))
    _check_reasoning(spec, request, path, later, sent=takes.reasoning)
    later.extend(provider_rules.request_violations(spec, request, path, reasoning=takes.reasoning))
    later.extend(model_fit.violations(spec, request, takes, path))
    fit = model_fit.fit(spec, request, takes, path)
    checks = _HeadChecks(spec, tuple(violations), tuple(later), tuple(tools), resolved, fit, minimum)
    return _Head(over, options_over, checks)


def prepare(
    provider: int,
    request: chat_pb2.ChatRequest,
    options: provider_service_pb2.RenderOptions | None = None,
    path: str = "chat_request",
    options_path: str = "options",
    capped_parts: bool = False,
    prefix: RenderedPrefix | None = None,
    models: Registry | None = None,
) -> Prepared:
    """Validate everything; InvalidArgument listing every violation, else the prepared request.

    Caps first: a request over them is not looked at further (nothing is parsed or counted).
    `capped_parts`: the caller built the messages from parts checked against the same
    caps (stored entries, a compile), so only their number is checked here.
    `prefix`: messages checked and rendered before the request's own, which follow
    them (render.render_after says when that holds); only with capped parts.
    A violation is then named by the request's own index: render_after renders the
    whole conversation again to name it.
    """
    assert prefix is None or capped_parts
    head = _head_checked(provider, request, options, path, options_path, models or packaged_registry())
    # The fields but the messages and the compiled prompt are the head's (checked once for them).
    over = list(head.over) if capped_parts else violations_of(request, path)
    over += head.options_over
    count = len(request.messages) + (prefix.size if prefix is not None else 0)
    if capped_parts and count > MAX_MESSAGES:
        over.append(FieldViolation(f"{path}.messages", f"at most {MAX_MESSAGES:,} items (got {count:,})"))
    InvalidArgument.raise_if(over, "invalid request")
    assert head.checks is not None  # within the caps, so checked
    spec, fit = head.checks.spec, head.checks.fit
    violations = list(head.checks.first)
    marker = request.compiled_prompt.boundary_marker
    if marker and marker != DEFAULT_BOUNDARY_MARKER:
        # Only the compiler's own marker is stripped: honouring any caller-given
        # string would let a short one (say "\n") rewrite the whole prompt.
        violations.append(
            FieldViolation(
                f"{path}.compiled_prompt.boundary_marker", "must be empty or the compiler's marker"
            )
        )
    if not request.messages:
        violations.append(FieldViolation(f"{path}.messages", "at least one message is required"))
    elif spec.system_apart and all(m.role == chat_pb2.CHAT_ROLE_SYSTEM for m in request.messages):
        # System text goes apart from the conversation there, which must not be empty.
        violations.append(FieldViolation(f"{path}.messages", "needs a user, assistant or tool message"))
    violations.extend(message_checks(spec, request, path))
    violations.extend(head.checks.later)
    paired, notices, pairing_violations = pair_tool_calls(
        request, path, system_apart=spec.system_apart, prefix=prefix.pairing if prefix else None
    )
    violations.extend(pairing_violations)
    violations.extend(provider_rules.message_violations(spec, paired, path))
    InvalidArgument.raise_if(violations, "invalid request")

    adapted = provider_rules.adapt(spec, request, paired, path, prefix, fit=fit)
    tools = list(head.checks.tools)
    resolved = head.checks.resolved
    has_tools = bool(tools)
    choice = request.tool_choice.mode if has_tools else chat_pb2.TOOL_CHOICE_MODE_UNSPECIFIED
    if adapted.history_tools:
        tools = [
            Tool(name, provider_rules.HISTORY_TOOL_DESCRIPTION, tool_schema(chat_pb2.ToolDefinition()))
            for name in adapted.history_tools
        ]
        choice = chat_pb2.TOOL_CHOICE_MODE_NONE
    stable, dynamic = split_compiled(request.compiled_prompt)
    origins = tuple(paired.origins)
    if prefix is not None:
        leading, leading_origins = prefix.leading_system, prefix.leading_origins
    else:
        leading = tuple(take_leading_system(adapted.request))
        leading_origins, origins = origins[: len(leading)], origins[len(leading) :]
    runtime = ""
    merged: list[Notice] = []
    if resolved.dynamic_after and _ends_with_user_turn(adapted.request):
        # The caller's opening system text (a summary of earlier conversation, say) stays
        # before the conversation, apart from the dynamic half that follows it.
        runtime, dynamic = dynamic, ""
    else:
        dynamic, leading, merged = _merge_leading_system(stable, dynamic, leading, leading_origins, path)
    return Prepared(
        request=adapted.request,
        options=resolved,
        path=path,
        tools=tools,
        # The original's rule: without tools, choice and parallel calls are cleared.
        choice=choice,
        choice_name=request.tool_choice.tool_name if has_tools else "",
        parallel=request.parallel_tool_calls
        if has_tools and request.HasField("parallel_tool_calls")
        else None,
        stable=stable,
        dynamic=dynamic,
        notices=(*fit.notices, *merged, *notices, *adapted.notices),
        origins=origins,
        prefix=prefix,
        leading_system=leading,
        runtime=runtime,
        cache_minimum=head.checks.minimum,
    )


def _ends_with_user_turn(request: chat_pb2.ChatRequest) -> bool:
    """Whether the request's last message but system ones is the user's or a tool result: the
    newest user turn ends the conversation, and the dynamic half can follow it."""
    for message in reversed(request.messages):
        if message.role != chat_pb2.CHAT_ROLE_SYSTEM:
            return message.role in (chat_pb2.CHAT_ROLE_USER, chat_pb2.CHAT_ROLE_TOOL)
    return False


def _merge_leading_system(
    stable: str, dynamic: str, leading: tuple[str, ...], origins: tuple[int, ...], path: str
) -> tuple[str, tuple[str, ...], list[Notice]]:
    """(dynamic half, caller system text sent apart, notices): the compiled prompt, when there is
    one, stands for the caller's opening system messages (one system text, not three)."""
    if not leading or not (stable or dynamic):
        return dynamic, leading, []
    merged = "\n\n".join(text for text in (dynamic, *leading) if text)
    notices = [
        Notice(
            provider_rules.SYSTEM_MERGED,
            "the compiled prompt stands for the caller's system text: this system message was sent "
            "at the end of the prompt's dynamic half",
            f"{path}.messages[{origin}]",
        )
        for origin in origins
    ]
    return merged, (), notices


def tool_rule_violations(
    provider: int,
    request: chat_pb2.ChatRequest,
    path: str = "chat_request",
    models: Registry | None = None,
) -> list[FieldViolation]:
    """The original's tool rules alone (and the model's), for a request not rendered for a provider yet."""
    violations: list[FieldViolation] = []
    spec = spec_for(provider) or _NO_SPEC
    takes = model_fit.takes_for(spec, models or packaged_registry(), request.model)
    _check_tools(spec, request, path, violations)
    _check_choice(request, path, violations)
    violations.extend(provider_rules.request_violations(spec, request, path, reasoning=takes.reasoning))
    violations.extend(model_fit.violations(spec, request, takes, path))
    return violations
