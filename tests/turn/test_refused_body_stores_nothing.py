"""A PrepareTurn whose provider body is refused stores nothing, and its corrected retry succeeds.

The body is rendered inside the round's unit of work (service/turn.py), so each
way rendering refuses a request rolls the round back: the thread's entries,
turns, tool-call rows, manifests and events are what they were, a watcher of the
thread sees no event, and the same request with its one mistake corrected
(the same entry ids, so a stored entry would make it ALREADY_EXISTS) succeeds.

Each case is refused by the render alone: what the request is checked against
before the transaction does not see it (the model comes from the thread, the
media kind and its MIME type are each fine on their own, the history was stored
for another provider).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import grpc
import pytest

from pioneer_grpc.v1 import (
    chat_pb2,
    history_pb2,
    manifest_service_pb2,
    provider_service_pb2,
    turn_service_pb2,
)
from tests.events.helpers import Observer
from tests.history.rpc import ASSISTANT, TOOL, USER, entry, failure, tool_call
from tests.history.test_entry_media import SCREENSHOT
from tests.history.test_turn_in_three_calls import bare, complete, everything
from tests.turn.test_prepare_turn import Client, compile_input, weather_tool

ANTHROPIC = provider_service_pb2.PROVIDER_ANTHROPIC_MESSAGES
CHAT = provider_service_pb2.PROVIDER_OPENAI_CHAT_COMPLETIONS
RESPONSES = provider_service_pb2.PROVIDER_OPENAI_RESPONSES
GEMINI = provider_service_pb2.PROVIDER_GEMINI_GENERATE_CONTENT
BEDROCK = provider_service_pb2.PROVIDER_AMAZON_BEDROCK_CONVERSE


def media(kind: str, mime: str = "", data: bytes = b"", uri: str = "") -> chat_pb2.ContentPart:
    part = (
        chat_pb2.MediaPart(mime_type=mime, data=data) if data else chat_pb2.MediaPart(mime_type=mime, uri=uri)
    )
    return chat_pb2.ContentPart(**{kind: part})


def looking_at(*parts: chat_pb2.ContentPart) -> list[history_pb2.ConversationEntry]:
    """The round's new entries: the user's message with `parts`."""
    return [bare("u-look", USER, "What is in this?", content_parts=list(parts))]


def screenshot_round(*parts: chat_pb2.ContentPart) -> list[history_pb2.ConversationEntry]:
    """The round's new entries: a screenshot tool's call, and its result carrying `parts`."""
    return [
        bare("a-shot", ASSISTANT, tool_calls=[tool_call("call_0", "screenshot")]),
        bare(
            "r-shot", TOOL, "the screen", tool_call_id="call_0", name="screenshot", content_parts=list(parts)
        ),
    ]


@dataclass(frozen=True)
class Case:
    thread_model: str
    # The round's fields, refused (False) and corrected (True).
    request: Callable[[bool], dict]
    # A field the refusal names (a prefix of it).
    names: str
    # The thread's first (completed) turn, when the case needs a history of its own.
    history: list[history_pb2.ConversationEntry] = field(default_factory=list)


CASES = {
    # The thread's model takes no forced tool choice (registry tool rules); the request names no model.
    "a tool choice the thread's model refuses": Case(
        "claude-sonnet-5-5",
        lambda ok: dict(
            provider=ANTHROPIC,
            tools=[weather_tool()],
            tool_choice=chat_pb2.ToolChoice(
                mode=chat_pb2.TOOL_CHOICE_MODE_AUTO if ok else chat_pb2.TOOL_CHOICE_MODE_REQUIRED
            ),
            new_entries=looking_at(),
        ),
        "tool_choice.mode",
    ),
    "tools on Chat Completions for the thread's Responses-only model": Case(
        "gpt-6-astra",
        lambda ok: dict(provider=RESPONSES if ok else CHAT, tools=[weather_tool()], new_entries=looking_at()),
        "tools",
    ),
    "an image type the provider refuses": Case(
        "claude-sonnet-4-5",
        lambda ok: dict(
            provider=ANTHROPIC,
            new_entries=looking_at(media("image", "image/png" if ok else "image/bmp", SCREENSHOT)),
        ),
        "chat_request.messages[",
    ),
    "a document type the provider refuses, in a tool result": Case(
        "claude-sonnet-4-5",
        lambda ok: dict(
            provider=ANTHROPIC,
            new_entries=[
                *looking_at(),
                *screenshot_round(media("file", "text/plain" if ok else "application/msword", b"notes")),
            ],
        ),
        "chat_request.messages[",
    ),
    "a file URI without its MIME type": Case(
        "gemini-2.5-pro",
        lambda ok: dict(
            provider=GEMINI,
            new_entries=looking_at(
                media("image", "image/png" if ok else "", uri="https://example.com/a.png")
            ),
        ),
        "chat_request.messages[",
    ),
    "media by URL where the provider takes data": Case(
        "claude-sonnet-4-5",
        lambda ok: dict(
            provider=BEDROCK,
            model="anthropic.claude-sonnet-4-5-v1:0",
            new_entries=looking_at(
                media("image", "image/png", SCREENSHOT)
                if ok
                else media("image", "image/png", uri="https://x.io/a.png")
            ),
        ),
        "chat_request.messages[",
    ),
    "a thinking budget below the provider's minimum": Case(
        "claude-sonnet-4-5",
        lambda ok: dict(
            provider=ANTHROPIC,
            max_tokens=8000,
            reasoning=chat_pb2.Reasoning(budget_tokens=2048 if ok else 100),
            new_entries=looking_at(),
        ),
        "reasoning.budget_tokens",
    ),
    "render options the provider refuses": Case(
        "claude-sonnet-4-5",
        lambda ok: dict(
            provider=ANTHROPIC,
            render_options=provider_service_pb2.RenderOptions(
                cache_key_prefix="ok-prefix" if ok else "has space"
            ),
            new_entries=looking_at(),
        ),
        "render_options.cache_key_prefix",
    ),
    # Stored by a turn rendered for Chat Completions, which takes any image type as data.
    "a history the provider refuses": Case(
        "claude-sonnet-4-5",
        lambda ok: dict(provider=CHAT if ok else ANTHROPIC, new_entries=looking_at()),
        "chat_request.messages[",
        history=[entry("h-u", "turn-1", USER, "Look.", content_parts=[media("image", "image/bmp", b"BM..")])],
    ),
}


@pytest.mark.parametrize("name", CASES)
async def test_a_refused_body_stores_nothing_and_the_corrected_round_succeeds(pg_server, name):
    case = CASES[name]
    c = Client(pg_server)
    await c.thread("t", model=case.thread_model)
    first = case.history or [bare("u1", USER, "Hello.")]
    await complete(c, "turn-1", *first, bare("f1", ASSISTANT, "Hello!"))

    def round_request(ok: bool, extra: str) -> turn_service_pb2.PrepareTurnRequest:
        # A compile of its own: a round that stored its manifest would add an event.
        return turn_service_pb2.PrepareTurnRequest(
            thread_id="t", turn_id="turn-2", compile_input=compile_input(extra), **case.request(ok)
        )

    # The turn in progress already holds a round (its manifest and its event).
    opened = await c.prepare_turn(
        turn_service_pb2.PrepareTurnRequest(
            thread_id="t",
            turn_id="turn-2",
            compile_input=compile_input("opened"),
            new_entries=[bare("u2", USER, "Hi")],
        )
    )
    observer = Observer(
        pg_server.channel(),
        manifest_service_pb2.WatchManifestsRequest(thread_id="t", after_event_id=opened.manifest_event_id),
    ).start()
    await observer.wait_live()
    before = await everything(c, pg_server, "t")

    refused = await failure(c.prepare_turn(round_request(False, "refused")))
    assert refused.code == grpc.StatusCode.INVALID_ARGUMENT, refused
    assert any(f.startswith(case.names) for f, _ in refused.violations), refused.violations
    assert await everything(c, pg_server, "t") == before

    done = await c.prepare_turn(round_request(True, "corrected"))
    assert done.provider_body_json
    assert [m.content for m in done.chat_request.messages][-1] in ("What is in this?", "the screen")
    # The first event the watcher sees is the corrected round's: the refused one published none.
    assert await observer.wait_for_count(1) == [done.manifest_event_id]
    await observer.cancel()


async def test_a_refused_round_over_the_threshold_stores_only_the_summary_a_load_would(pg_server):
    """The history is settled before the round's transaction (a load's summary is kept, as a
    LoadConversationHistory would keep it); the refused round itself stores nothing."""
    c = Client(pg_server)
    await c.thread("t", model="claude-sonnet-4-5", max_context_tokens=3000, response_reserve_tokens=500)
    for turn in range(30):
        await complete(
            c,
            f"old-{turn}",
            bare(f"u{turn}", USER, f"Please update src/module_{turn}.py for retry case {turn}."),
            bare(
                f"a{turn}", ASSISTANT, f"Done: src/module_{turn}.py now retries. " + "Details follow. " * 12
            ),
        )
    before = await everything(c, pg_server, "t")

    def round_request(budget: int) -> turn_service_pb2.PrepareTurnRequest:
        return turn_service_pb2.PrepareTurnRequest(
            thread_id="t",
            turn_id="now",
            compile_input=compile_input(),
            provider=ANTHROPIC,
            max_tokens=8000,
            reasoning=chat_pb2.Reasoning(budget_tokens=budget),
            new_entries=[bare("u-now", USER, "What did we change?")],
        )

    refused = await failure(c.prepare_turn(round_request(100)))
    assert refused.code == grpc.StatusCode.INVALID_ARGUMENT, refused
    assert [f for f, _ in refused.violations] == ["reasoning.budget_tokens"]
    assert await everything(c, pg_server, "t") == before

    done = await c.prepare_turn(round_request(2048))
    # The summary the refused round's settling stored is reused.
    assert done.history_report.summary_use == history_pb2.SUMMARY_USE_REUSED
    assert done.chat_request.messages[0].content.startswith("Summary of earlier conversation:\n")
    assert done.chat_request.messages[-1].content == "What did we change?"


def _prepare_turn_comment() -> str:
    """The comment above `rpc PrepareTurn` in turn_service.proto, as one line of text."""
    proto = Path(__file__).resolve().parents[2] / "protos" / "pioneer" / "v1" / "turn_service.proto"
    lines = proto.read_text().splitlines()
    end = next(i for i, line in enumerate(lines) if line.strip().startswith("rpc PrepareTurn("))
    start = end
    while lines[start - 1].strip().startswith("//"):
        start -= 1
    return " ".join(line.strip().removeprefix("//").strip() for line in lines[start:end])


def test_the_contract_says_a_refused_body_stores_nothing():
    comment = _prepare_turn_comment()
    assert "Every error below stores nothing" in comment
    # What the test above shows: rendering the body is inside the round, so its refusal stores nothing.
    assert "after the round committed" not in comment
    assert "entries and manifest stay" not in comment
    assert "rendering the provider body" in comment
