"""The provider cache model the benchmark and the server's expected usage share."""

from __future__ import annotations

from pioneer_grpc.models.registry import packaged_registry
from pioneer_grpc.providers.cache_model import expected_round, input_cost
from pioneer_grpc.v1 import provider_service_pb2 as P


def _openai_body(turns: int) -> dict[str, object]:
    messages = [{"role": "system", "content": "rules " * 300}]
    for i in range(turns):
        messages.append({"role": "user", "content": f"question {i} " + "words " * 400})
        messages.append({"role": "assistant", "content": f"answer {i}"})
    return {"model": "gpt-5", "messages": messages}


def test_the_round_after_reads_the_prefix_it_shares_in_128_token_steps() -> None:
    info = packaged_registry().lookup("gpt-5")
    assert info is not None and info.prices is not None
    first = expected_round(P.PROVIDER_OPENAI_CHAT_COMPLETIONS, info, None, _openai_body(3))
    assert first.read == 0 and first.total > 1024
    after = expected_round(P.PROVIDER_OPENAI_CHAT_COMPLETIONS, info, _openai_body(3), _openai_body(4))
    assert after.total > first.total
    assert 1024 <= after.read <= first.total and (after.read - 1024) % 128 == 0
    assert after.cost == input_cost(info.prices, after.total, after.read, 0) < first.cost * 2


def test_a_changed_first_message_reads_nothing() -> None:
    info = packaged_registry().lookup("gpt-5")
    assert info is not None
    changed = _openai_body(4)
    changed["messages"][0] = {"role": "system", "content": "other " * 300}  # type: ignore[index]
    after = expected_round(P.PROVIDER_OPENAI_CHAT_COMPLETIONS, info, _openai_body(3), changed)
    assert after.read == 0


def test_input_cost_prices_each_part() -> None:
    info = packaged_registry().lookup("claude-sonnet-4-5")
    assert info is not None and info.prices is not None
    p = info.prices
    assert (
        input_cost(p, 1_000_000, 600_000, 100_000)
        == (300_000 * p.input + 600_000 * p.cache_read + 100_000 * p.cache_write) / 1e6
    )
