"""A seeded generator of agent conversations, played against a real server through its RPCs.

Each history is one thread: turns of a user message, tool rounds (one to three
calls each, results in any order), a final answer, CompleteTurn. Along the way,
as agent loops fail in real life:
- interruptions: a call whose result never comes (the turn stops there, or the
  next round goes on without it), a turn never completed, a final answer never sent;
- retries: the same new entries sent twice (appends are idempotent by entry id);
- call ids numbered within each turn by some loops (call_0 again in the next turn);
- a final round that ends with the start of the answer (a prefill ending in a space);
- an inline PNG or PDF now and then, from the user or in a tool result (a screenshot);
- hostile entries: empty or blank messages, arguments that are not a JSON object,
  a call id used twice, a result for no call, a result naming another tool, a
  result arriving a turn late, a call name outside [A-Za-z0-9_-];
- hostile rounds: Anthropic with extended thinking and a forced tool choice;
- long conversations on small budgets, so loads summarize and truncate (half of
  those threads with the truncate strategy, some where clearing keeps one tool result).

Every PrepareTurn names a provider; the last round of a history is prepared for
all five (OpenAI Chat and Responses, Anthropic, Gemini, Bedrock Converse). A
hostile step is tried first: INVALID_ARGUMENT on its new entries is an expected
rejection, after which the clean version is sent, as a fixed client would. A
hostile step the server accepts is stored, and from then on every round must
still render a body the provider accepts. Everything else must succeed. Each
body goes through the strict validator of its provider (for Converse, also its
SDK's request types, tests/providers/bedrock/conformance.py); a sample is kept for the
official SDKs (see test_generative_rounds.py).
"""

from __future__ import annotations

import json
import random
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import grpc
from google.protobuf import struct_pb2
from pydantic import ValidationError

from pioneer_grpc.client import AsyncClient, RpcFailure
from pioneer_grpc.providers.specs import SPECS
from pioneer_grpc.v1 import (
    chat_pb2,
    common_pb2,
    history_pb2,
    history_service_pb2,
    prompt_pb2,
    provider_service_pb2,
    turn_service_pb2,
)
from tests.providers.bedrock.rules import check_types
from tests.providers.bedrock.rules import strict as bedrock_strict
from tests.providers.cases import MODELS as CASE_MODELS
from tests.providers.cases import PDF, PNG
from tests.providers.conformance import conformances
from tests.providers.strict import StrictViolation
from tests.support import decoded

P = provider_service_pb2
USER, ASSISTANT, TOOL = (
    history_pb2.ENTRY_ROLE_USER,
    history_pb2.ENTRY_ROLE_ASSISTANT,
    history_pb2.ENTRY_ROLE_TOOL,
)
# Every registered provider (providers/specs.py), and the model it plays conversations with.
PROVIDERS = {provider: spec.name for provider, spec in SPECS.items()}
MODELS = CASE_MODELS


def _bedrock(body: dict[str, Any]) -> None:
    """Converse's conversation rules, then its SDK's request types (a type error as rule BR-types)."""
    bedrock_strict(body)
    try:
        check_types(body, MODELS[P.PROVIDER_AMAZON_BEDROCK_CONVERSE])
    except ValidationError as error:
        raise StrictViolation([f"BR-types: body: {error}"]) from None


def _unprefixed(field: str) -> str:
    """A notice's field without `chat_request.`: PrepareTurn names its own fields (`tools`, not
    `chat_request.tools`) where RenderChatRequest names those of its chat_request."""
    return field.removeprefix("chat_request.")


def _joins_results_and_text(message: dict[str, Any]) -> bool:
    kinds = [next(iter(block)) for block in message["content"]]
    return "toolResult" in kinds and kinds[-1] != "toolResult"


# Each provider's conversation rules (its Conformance's), and for Converse its SDK's request types too.
CHECKS = {P.PROVIDER_AMAZON_BEDROCK_CONVERSE: _bedrock}
# A round that may be refused: Bedrock tool choice none, refused once the conversation holds a tool call.
MAYBE_REFUSED = "bedrock_choice_none_after_tool_calls"
TOOL_NAMES = ("read_file", "grep", "run_tests", "write_file")
WORDS = (
    "the parser fails on src/app/main.py line 42; decided to keep the retry loop; user prefers tabs; "
    "open question: migrate the cache? tests in tests/unit pass; error: KeyError 'id' in handler"
).split()
COMPILE_INPUT = prompt_pb2.PromptCompileInput(
    profile=prompt_pb2.PROMPT_PROFILE_FULL, include_tool_recovery_policy=True, extra_system="Date: 2026-11-30"
)


def _tool(name: str) -> chat_pb2.ToolDefinition:
    params = struct_pb2.Struct()
    params.update({"type": "object", "properties": {"path": {"type": "string"}}})
    return chat_pb2.ToolDefinition(name=name, description=f"The {name} tool.", parameters=params)


TOOLS = [_tool(name) for name in TOOL_NAMES]


@dataclass
class Stats:
    histories: int = 0  # conversations (threads)
    histories_rendered: int = 0  # a thread's history as one PrepareTurn rendered it
    compared_with_scratch: int = 0  # round bodies compared with RenderChatRequest's
    # Converse bodies with a user message holding tool results and then the user's own blocks: where
    # the renderer joins messages across the end of a kept history (apis/bedrock.py `joined`).
    bedrock_joined: int = 0
    turns: int = 0
    rounds: int = 0
    appends: int = 0
    bodies: Counter[str] = field(default_factory=Counter)
    rejected: Counter[str] = field(default_factory=Counter)  # hostile steps refused, by kind
    accepted_hostile: Counter[str] = field(default_factory=Counter)  # hostile steps stored, by kind
    interruptions: Counter[str] = field(default_factory=Counter)
    retries: int = 0
    expected: Counter[str] = field(default_factory=Counter)  # refusals a correct loop expects
    notices: Counter[str] = field(default_factory=Counter)
    history_diagnostics: Counter[str] = field(default_factory=Counter)
    decisions: Counter[str] = field(default_factory=Counter)
    failures: Counter[str] = field(default_factory=Counter)  # broken invariants
    examples: dict[str, str] = field(default_factory=dict)
    sdk_sample: list[tuple[int, str, dict[str, Any]]] = field(default_factory=list)

    def fail(self, invariant: str, example: str) -> None:
        self.failures[invariant] += 1
        self.examples.setdefault(invariant, example[:600])

    def summary(self) -> str:
        lines = [
            f"conversations={self.histories} histories rendered={self.histories_rendered} "
            f"(compared with a render from scratch: {self.compared_with_scratch}) "
            f"turns={self.turns} rounds(PrepareTurn calls)={self.rounds} appends={self.appends} "
            f"retries={self.retries} converse bodies joining tool results and a user message="
            f"{self.bedrock_joined}",
            f"expected refusals: {dict(self.expected)}",
            f"bodies validated per provider: {dict(self.bodies)}",
            f"hostile steps rejected: {dict(self.rejected)}",
            f"hostile steps accepted (then rendered): {dict(self.accepted_hostile)}",
            f"interruptions: {dict(self.interruptions)}",
            f"history decisions: {dict(self.decisions)}",
            f"history diagnostics (repairs etc.): {dict(self.history_diagnostics)}",
            f"render notices: {dict(self.notices)}",
            f"broken invariants: {dict(self.failures)}",
        ]
        lines += [f"  e.g. {name}: {text}" for name, text in self.examples.items()]
        return "\n".join(lines)


@dataclass
class Step:
    """New entries of one round: the clean version, and a hostile one tried first (with its kind)."""

    clean: list[history_pb2.ConversationEntry]
    hostile: list[history_pb2.ConversationEntry] | None = None
    kind: str = ""


class Conversation:
    """One history: drives a thread through turns, rounds and a final all-provider round."""

    def __init__(self, rng: random.Random, client: AsyncClient, stats: Stats, name: str, sdk_every: int):
        self.rng = rng
        self.client = client
        self.stats = stats
        self.thread_id = name
        self.sdk_every = sdk_every
        self.counter = 0
        self.calls: list[common_pb2.ToolCall] = []  # every call made, for late and duplicate hostiles
        self.long = rng.random() < 0.12
        self.stored_hostile: set[str] = set()  # hostile kinds the server accepted into this thread
        self.pending = False  # the turn's latest calls lack results (an interruption)
        # Some loops number their calls within each turn (call_0, call_1, ...): ids come back in
        # later turns, which providers that want them unique in a request have rewritten.
        # Drawn apart from `rng`, so that the conversations the seed gave before stay as they were.
        self.calls_this_turn: int | None = 0 if random.Random(f"{name}-ids").random() < 0.2 else None
        # Which user messages and tool results carry an image or a PDF: drawn apart as well.
        self.media = random.Random(f"{name}-media")

    # --- content ---------------------------------------------------------------------------

    def ident(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def text(self, low: int = 3, high: int = 30) -> str:
        if self.long:
            low, high = 120, 420
        return " ".join(self.rng.choice(WORDS) for _ in range(self.rng.randint(low, high)))

    def attached(self, chance: float) -> list[chat_pb2.ContentPart]:
        """Now and then a screenshot (an inline PNG) or, less often, an inline PDF."""
        roll = self.media.random()
        if roll >= chance:
            return []
        if roll < chance / 4:
            pdf = chat_pb2.MediaPart(mime_type="application/pdf", data=PDF, filename="build log.pdf")
            return [chat_pb2.ContentPart(file=pdf)]
        return [chat_pb2.ContentPart(image=chat_pb2.MediaPart(mime_type="image/png", data=PNG))]

    def entry(self, turn: str, role: int, **fields: Any) -> history_pb2.ConversationEntry:
        return history_pb2.ConversationEntry(entry_id=self.ident("e"), turn_id=turn, role=role, **fields)  # type: ignore[arg-type]

    # --- steps -----------------------------------------------------------------------------

    def user_step(self, turn: str) -> Step:
        # Now and then a participant name that OpenAI would refuse (the server leaves it out, saying so).
        name = "Ana Silva" if self.rng.random() < 0.05 else ""
        clean = [self.entry(turn, USER, content=self.text(), name=name, content_parts=self.attached(0.08))]
        roll = self.rng.random()
        if roll < 0.03:
            return Step(clean, [self.entry(turn, USER, content="")], "empty_entry")
        if roll < 0.05:
            return Step(clean, [self.entry(turn, USER, content=" \n\t ")], "blank_entry")
        if roll < 0.06 and self.calls:
            late = self.rng.choice(self.calls)
            result = self.entry(turn, TOOL, tool_call_id=late.id, name=late.name, content="late result")
            return Step(clean, [*clean, result], "late_result")
        return Step(clean)

    def call_id(self) -> str:
        if self.calls_this_turn is None:
            return self.ident("call_")
        self.calls_this_turn += 1
        return f"call_{self.calls_this_turn - 1}"

    def tool_round(self, turn: str) -> tuple[Step, bool]:
        """An assistant call entry and its results; True when a result was left out (interrupted)."""
        calls = [
            common_pb2.ToolCall(
                id=self.call_id(),
                name=self.rng.choice(TOOL_NAMES),
                arguments=json.dumps({"path": self.text(1, 3)}),
            )
            for _ in range(self.rng.choice((1, 1, 1, 2, 3)))
        ]
        text = self.text() if self.rng.random() < 0.4 else ""
        assistant = self.entry(turn, ASSISTANT, content=text, tool_calls=calls)
        results = [
            self.entry(
                turn,
                TOOL,
                tool_call_id=c.id,
                name=c.name,
                content=self.text(),
                content_parts=self.attached(0.06),
            )
            for c in calls
        ]
        if self.rng.random() < 0.15:
            self.rng.shuffle(results)
        interrupted = self.rng.random() < 0.12
        if interrupted:
            results = results[: self.rng.randrange(len(results))]
        clean = [assistant, *results]
        if self.rng.random() < 0.1:  # some loops store the text before a call as its own entry
            clean.insert(0, self.entry(turn, ASSISTANT, content=self.text()))
        step = Step(clean)
        roll = self.rng.random()
        hostile_call = common_pb2.ToolCall()
        hostile_call.CopyFrom(calls[0])
        if roll < 0.025:
            hostile_call.arguments = self.rng.choice(("not json", "[1, 2]", '"text"', "{broken"))
            step = self._with_call(turn, step, assistant, hostile_call, "non_object_arguments")
        elif roll < 0.04:
            # Ids may repeat across entries and turns, not among the calls open together.
            hostile_call.name = calls[-1].name
            step = self._with_call(turn, step, assistant, hostile_call, "duplicate_call_id", extra=True)
        elif roll < 0.05:
            hostile_call.name = "read.file"
            step = self._with_call(turn, step, assistant, hostile_call, "bad_call_name")
        elif roll < 0.065:
            orphan = self.entry(turn, TOOL, tool_call_id=self.ident("ghost_"), name="grep", content="x")
            step = Step(clean, [*clean, orphan], "orphan_result")
        elif roll < 0.08 and results:
            wrong = history_pb2.ConversationEntry()
            wrong.CopyFrom(results[0])
            wrong.name = next(n for n in TOOL_NAMES if n != wrong.name)
            step = Step(clean, [assistant, wrong, *results[1:]], "result_names_another_tool")
        elif roll < 0.09:
            step = Step(clean, [*clean, self.entry(turn, ASSISTANT, content="")], "empty_entry")
        self.calls.extend(calls)
        return step, interrupted

    def _with_call(
        self,
        turn: str,
        step: Step,
        assistant: history_pb2.ConversationEntry,
        call: common_pb2.ToolCall,
        kind: str,
        extra: bool = False,
    ) -> Step:
        """The step with the assistant entry's first call replaced by `call` (`extra`: added after them)."""
        hostile = history_pb2.ConversationEntry()
        hostile.CopyFrom(assistant)
        hostile.entry_id = self.ident("e")
        if extra:
            hostile.tool_calls.append(call)
        else:
            hostile.tool_calls[0].CopyFrom(call)
        return Step(step.clean, [hostile if e is assistant else e for e in step.clean], kind)

    # --- rounds ----------------------------------------------------------------------------

    def round_options(self, provider: int) -> tuple[dict[str, Any], str]:
        """PrepareTurn fields of the round, and the kind when the round itself is hostile."""
        options: dict[str, Any] = {"provider": provider, "model": MODELS[provider]}
        if self.rng.random() < 0.85:
            options["tools"] = TOOLS
            mode = self.rng.choice(
                (
                    chat_pb2.TOOL_CHOICE_MODE_UNSPECIFIED,
                    chat_pb2.TOOL_CHOICE_MODE_AUTO,
                    chat_pb2.TOOL_CHOICE_MODE_AUTO,
                    chat_pb2.TOOL_CHOICE_MODE_NONE,
                    chat_pb2.TOOL_CHOICE_MODE_REQUIRED,
                    chat_pb2.TOOL_CHOICE_MODE_TOOL,
                )
            )
            name = self.rng.choice(TOOL_NAMES) if mode == chat_pb2.TOOL_CHOICE_MODE_TOOL else ""
            options["tool_choice"] = chat_pb2.ToolChoice(mode=mode, tool_name=name)
            if self.rng.random() < 0.4:
                options["parallel_tool_calls"] = self.rng.random() < 0.5
        roll = self.rng.random()
        if roll < 0.25:
            options["reasoning"] = chat_pb2.Reasoning(effort=chat_pb2.REASONING_EFFORT_LOW)
        elif roll < 0.35:
            options["reasoning"] = chat_pb2.Reasoning(disabled=True)
        if self.rng.random() < 0.2:
            options["temperature"] = 0.3
        forced = options.get("tool_choice", chat_pb2.ToolChoice()).mode in (
            chat_pb2.TOOL_CHOICE_MODE_REQUIRED,
            chat_pb2.TOOL_CHOICE_MODE_TOOL,
        )
        thinking = "reasoning" in options and not options["reasoning"].disabled
        hostile = provider == P.PROVIDER_ANTHROPIC_MESSAGES and "tools" in options and forced and thinking
        if hostile:
            return options, "anthropic_forced_choice_with_thinking"
        none = options.get("tool_choice", chat_pb2.ToolChoice()).mode == chat_pb2.TOOL_CHOICE_MODE_NONE
        if provider == P.PROVIDER_AMAZON_BEDROCK_CONVERSE and "tools" in options and none:
            # Refused once the conversation holds a tool call (Converse cannot forbid calling a tool
            # it must declare for one); taken before.
            return options, MAYBE_REFUSED
        return options, ""

    async def prepare(
        self, turn: str, entries: list[history_pb2.ConversationEntry], provider: int, entries_kind: str = ""
    ) -> bool:
        """One PrepareTurn; False when hostile new entries were rejected (nothing was stored)."""
        options, round_kind = self.round_options(provider)
        for attempt in range(2):
            request = turn_service_pb2.PrepareTurnRequest(
                thread_id=self.thread_id,
                turn_id=turn,
                new_entries=entries,
                compile_input=COMPILE_INPUT,
                **options,
            )
            self.stats.rounds += 1
            try:
                reply = await self.client.prepare_turn(request)
            except RpcFailure as error:
                outcome = self.classify(error, entries_kind, round_kind, provider)
                if outcome == "entries":
                    return False
                if outcome == "round" and attempt == 0:
                    options["tool_choice"] = chat_pb2.ToolChoice(mode=chat_pb2.TOOL_CHOICE_MODE_AUTO)
                    round_kind = ""
                    continue
                return True
            if round_kind == MAYBE_REFUSED:
                body = json.loads(reply.provider_body_json)
                if "toolConfig" in body:
                    self.stats.fail("tool_choice_none_left_a_callable_tool", f"{PROVIDERS[provider]}")
            elif round_kind:
                self.stats.fail("hostile_round_accepted", f"{PROVIDERS[provider]} {round_kind}")
            if entries_kind:
                self.stats.accepted_hostile[entries_kind] += 1
                self.stored_hostile.add(entries_kind)
            self.check(reply, provider)
            await self.same_as_from_scratch(reply, provider, options)
            return True
        return True

    async def same_as_from_scratch(
        self, reply: turn_service_pb2.PrepareTurnResponse, provider: int, options: dict[str, Any]
    ) -> None:
        """The round's body is the one RenderChatRequest renders from its whole chat_request.

        PrepareTurn renders a thread's history once and only the turn's own messages
        each round (providers/prefix.py): this is what it must come to.
        """
        name = PROVIDERS[provider]
        # As PrepareTurn renders a round: OpenAI's prompt_cache_key from the thread's id.
        render_options = provider_service_pb2.RenderOptions()
        if options.get("render_options") is not None:
            render_options.CopyFrom(options["render_options"])
        if not render_options.HasField("prompt_cache_thread_id"):
            render_options.prompt_cache_thread_id = self.thread_id
        try:
            scratch = await self.client.render_chat_request(
                provider_service_pb2.RenderChatRequestRequest(
                    provider=provider,  # type: ignore[arg-type]
                    chat_request=reply.chat_request,
                    options=render_options,
                )
            )
        except RpcFailure as error:
            self.stats.fail(f"render_from_scratch_failed[{name}]", f"{error.code.name}: {error.message}")
            return
        round_notices = [(n.code, n.message, _unprefixed(n.field)) for n in reply.provider_notices]
        if (
            scratch.body_json != reply.provider_body_json
            or scratch.path != reply.provider_path
            or [(n.code, n.message, _unprefixed(n.field)) for n in scratch.notices] != round_notices
        ):
            self.stats.fail(f"body_differs_from_scratch[{name}]", reply.provider_body_json[:300])
        self.stats.compared_with_scratch += 1

    def classify(self, error: RpcFailure, entries_kind: str, round_kind: str, provider: int) -> str:
        found = decoded(error).violations
        fields = [f for f, _ in found]
        if error.code == grpc.StatusCode.FAILED_PRECONDITION and self.pending:
            # The turn's latest calls have no result yet: a round cannot be prepared before them.
            self.stats.expected["results_pending"] += 1
            return "pending"
        if error.code == grpc.StatusCode.INVALID_ARGUMENT:
            if round_kind and "tool_choice.mode" in fields:
                self.stats.rejected[round_kind] += 1
                return "round"  # retried with tool choice auto, which classifies the entries
            if entries_kind and fields and all(f.startswith("new_entries") for f in fields):
                self.stats.rejected[entries_kind] += 1
                return "entries"
        invariant = f"prepare_failed[{PROVIDERS[provider]}]"
        if entries_kind and error.code == grpc.StatusCode.INVALID_ARGUMENT:
            # Rejected for the rendered history, not the new entries: those were stored.
            self.stats.accepted_hostile[entries_kind] += 1
            self.stored_hostile.add(entries_kind)
        stored = sorted(self.stored_hostile)
        invariant += f" after accepting {'+'.join(stored)}" if stored else " on a clean conversation"
        self.stats.fail(invariant, f"{error.code.name}: {found or error.message}")
        return "failed"

    def check(self, reply: turn_service_pb2.PrepareTurnResponse, provider: int) -> None:
        name = PROVIDERS[provider]
        report = reply.history_report
        self.stats.decisions[history_pb2.HistoryDecision.Name(report.decision)] += 1
        for diagnostic in report.diagnostics:
            self.stats.history_diagnostics[diagnostic.code] += 1
        for notice in reply.provider_notices:
            self.stats.notices[notice.code] += 1
        body = json.loads(reply.provider_body_json)
        try:
            CHECKS.get(provider, conformances()[provider].strict)(body)
        except StrictViolation as violation:
            where = "+".join(sorted(self.stored_hostile)) or "a clean conversation"
            for rule in sorted(violation.rules):
                self.stats.fail(f"strict[{name}] {rule} ({where})", str(violation))
        self.stats.bodies[name] += 1
        self.stats.histories_rendered += 1
        if provider == P.PROVIDER_AMAZON_BEDROCK_CONVERSE and any(
            map(_joins_results_and_text, body["messages"])
        ):
            self.stats.bedrock_joined += 1
        if self.stats.bodies[name] % self.sdk_every == 1 or self.sdk_every == 1:
            self.stats.sdk_sample.append((provider, reply.provider_path, body))

    async def append(self, step: Step) -> None:
        for entries, kind in ((step.hostile, step.kind), (step.clean, "")):
            if entries is None:
                continue
            self.stats.appends += 1
            try:
                await self.client.append_entries(
                    history_service_pb2.AppendEntriesRequest(thread_id=self.thread_id, entries=entries)
                )
            except RpcFailure as error:
                fields = [f for f, _ in decoded(error).violations]
                if kind and error.code == grpc.StatusCode.INVALID_ARGUMENT and fields:
                    self.stats.rejected[kind] += 1
                    continue
                self.stats.fail(
                    f"append_failed{'' if not kind else ' ' + kind}", str(decoded(error).violations)
                )
                return
            if kind:
                self.stats.accepted_hostile[kind] += 1
                self.stored_hostile.add(kind)
            return

    async def send(self, turn: str, step: Step) -> None:
        """The step's entries, through PrepareTurn (mostly) or AppendEntries then an empty PrepareTurn."""
        provider = self.rng.choice(list(PROVIDERS))
        if self.rng.random() < 0.25:
            await self.append(step)
            await self.prepare(turn, [], provider)
            return
        if step.hostile is not None and not await self.prepare(turn, step.hostile, provider, step.kind):
            await self.prepare(turn, step.clean, provider)
        elif step.hostile is None:
            await self.prepare(turn, step.clean, provider)
        if self.rng.random() < 0.08:  # a retry of the same round
            self.stats.retries += 1
            await self.prepare(turn, step.clean if step.hostile is None else [], provider)

    # --- the history -----------------------------------------------------------------------

    async def run(self) -> None:
        self.stats.histories += 1
        config = history_pb2.ThreadConfig(model="gpt-5")
        if self.long or self.rng.random() < 0.1:
            config.max_context_tokens = self.rng.choice((1500, 3000, 6000))
            config.response_reserve_tokens = 300
            # Drawn apart from `rng` (as the call ids): the conversations the seed gave stay as they were.
            apart = random.Random(f"{self.thread_id}-config")
            if apart.random() < 0.5:
                config.compaction_strategy = history_pb2.COMPACTION_STRATEGY_TRUNCATE
            if apart.random() < 0.3:
                config.keep_tool_results = 1
        await self.client.create_thread(
            history_service_pb2.CreateThreadRequest(thread_id=self.thread_id, config=config)
        )
        turns = self.rng.choice((1, 1, 2, 2, 3, 4)) if not self.long else self.rng.randint(6, 14)
        for t in range(turns):
            await self.turn(f"t{t}")
        final = "final"
        entries = [self.entry(final, USER, content="Summarize where we are.")]
        if random.Random(f"{self.thread_id}-prefill").random() < 0.15:
            # A prefill: the start of the answer for the model to go on from, trailing space and all.
            entries.append(self.entry(final, ASSISTANT, content="Where we are: "))
        for i, provider in enumerate(PROVIDERS):
            await self.prepare(final, entries if i == 0 else [], provider)

    async def turn(self, turn: str) -> None:
        self.stats.turns += 1
        if self.calls_this_turn is not None:
            self.calls_this_turn = 0
        await self.send(turn, self.user_step(turn))
        self.pending = False
        for _ in range(self.rng.choice((0, 1, 1, 2, 3))):
            step, interrupted = self.tool_round(turn)
            self.pending = interrupted
            await self.send(turn, step)
            if interrupted:
                self.stats.interruptions["call_without_result"] += 1
                if self.rng.random() < 0.5:
                    self.stats.interruptions["turn_abandoned"] += 1
                    return
        self.pending = False
        if self.rng.random() < 0.9:
            await self.append(Step([self.entry(turn, ASSISTANT, content=self.text())]))
        else:
            self.stats.interruptions["no_final_answer"] += 1
        if self.rng.random() < 0.92:
            await self.client.complete_turn(
                history_service_pb2.CompleteTurnRequest(thread_id=self.thread_id, turn_id=turn)
            )
        else:
            self.stats.interruptions["turn_not_completed"] += 1
