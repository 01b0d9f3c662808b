"""After a completed turn, the first PrepareTurn renders the completed turn's messages only after the
history's rendered prefix, and sends the body a render of the whole history sends."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence

import pytest

from pioneer_grpc.providers import prefix as prefix_module
from pioneer_grpc.providers.conversation import RenderedPrefix
from pioneer_grpc.providers.specs import SPECS
from pioneer_grpc.service import turn as turn_module
from pioneer_grpc.v1 import (
    chat_pb2,
    history_pb2,
    history_service_pb2,
    provider_service_pb2,
    turn_service_pb2,
)
from tests.history.agent_turns import decision_text, tool_turn
from tests.history.rpc import config
from tests.providers.cases import MODELS
from tests.providers.conformance import conformances
from tests.turn.test_prepare_turn import Client, compile_input

P = provider_service_pb2
TURNS = 6
# Every registered provider (each keeps its prefix: tests/providers/test_prefix_boundary.py), with the
# model its shared cases use.
EVERY_PREFIX_PROVIDER = pytest.mark.parametrize(
    ("provider", "model"),
    [(provider, MODELS[provider]) for provider in SPECS],
    ids=[spec.name for spec in SPECS.values()],
)


class Renders:
    """The messages each render of a prefix went through: ("whole", n), ("extended", n), and those a
    kept prefix lost off its front ("slid", n) or its end ("cut", n)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls: list[tuple[str, int]] = []

        def whole(
            provider: int, messages: Sequence[chat_pb2.ChatMessage], path: str
        ) -> RenderedPrefix | None:
            self.calls.append(("whole", len(messages)))
            return prefix_module.render_prefix(provider, messages, path)

        def extended(
            provider: int, prefix: RenderedPrefix, messages: Sequence[chat_pb2.ChatMessage], path: str
        ) -> RenderedPrefix | None:
            self.calls.append(("extended", len(messages)))
            return prefix_module.extend_prefix(provider, prefix, messages, path)

        def taken_off(
            name: str, take: Callable[..., RenderedPrefix | None]
        ) -> Callable[..., RenderedPrefix | None]:
            def counted(
                provider: int,
                prefix: RenderedPrefix,
                gone: Sequence[chat_pb2.ChatMessage],
                kept: Sequence[chat_pb2.ChatMessage],
                path: str,
            ) -> RenderedPrefix | None:
                self.calls.append((name, len(gone)))
                return take(provider, prefix, gone, kept, path)

            return counted

        monkeypatch.setattr(turn_module, "render_prefix", whole)
        monkeypatch.setattr(turn_module, "extend_prefix", extended)
        monkeypatch.setattr(turn_module, "slide_prefix", taken_off("slid", prefix_module.slide_prefix))
        monkeypatch.setattr(turn_module, "cut_prefix", taken_off("cut", prefix_module.cut_prefix))

    def taken(self) -> list[tuple[str, int]]:
        calls, self.calls = self.calls, []
        return calls


def _strings(value: object) -> list[str]:
    """Every string in a JSON value."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, list):
        return [text for item in value for text in _strings(item)]
    return []


def _round(i: int, provider: int) -> turn_service_pb2.PrepareTurnRequest:
    user = tool_turn(i, lines=4)[0]
    return turn_service_pb2.PrepareTurnRequest(
        thread_id="t",
        turn_id=user.turn_id,
        new_entries=[user],
        compile_input=compile_input(),
        provider=provider,
    )


@EVERY_PREFIX_PROVIDER
async def test_the_first_round_after_a_completed_turn_renders_that_turn_only(
    database_url, server_factory, monkeypatch, provider, model
):
    one = await server_factory(database_url=database_url)
    other = await server_factory(database_url=database_url)
    mine, theirs = Client(one), Client(other)
    await mine.create_thread(
        history_service_pb2.CreateThreadRequest(thread_id="t", config=config(400_000, 16_000, model=model))
    )
    renders = Renders(monkeypatch)
    kept = 0
    for i in range(TURNS):
        reply = await mine.prepare_turn(_round(i, provider))
        calls = renders.taken()
        if i <= 1:
            # No history (no prefix to extend later), then the first one: rendered whole, once.
            assert calls == [("whole", kept)]
        else:
            # The turn completed since: its 4 messages after the kept prefix, nothing else.
            assert calls == [("extended", 4)], (i, calls)
        assert reply.history_report.entries_kept == kept
        assert reply.provider_body_json

        # The same round on a server that keeps nothing: the whole history rendered from scratch.
        other.ctx.load_cache.clear()
        again = await theirs.prepare_turn(_round(i, provider))
        assert renders.taken() == [("whole", kept)]
        assert again.provider_body_json.encode() == reply.provider_body_json.encode()
        assert list(again.provider_notices) == list(reply.provider_notices)
        body = json.loads(reply.provider_body_json)
        conformances()[provider].sdk_types(body, model)
        # Both servers render after a prefix: the body must still carry every kept turn.
        texts = "\n".join(_strings(body))
        assert all(decision_text(j) in texts for j in range(i)), i

        rest = tool_turn(i, lines=4)[1:]
        await mine.append_entries(history_service_pb2.AppendEntriesRequest(thread_id="t", entries=rest))
        await mine.complete_turn(
            history_service_pb2.CompleteTurnRequest(thread_id="t", turn_id=rest[0].turn_id)
        )
        kept += 4
    assert kept == TURNS * 4
    assert history_pb2.HISTORY_DECISION_FULL == reply.history_report.decision
