"""What the server keeps per observer and per cached load is bounded in bytes, not only in count."""

from __future__ import annotations

import gc
import weakref
from types import SimpleNamespace

import pytest

from pioneer_grpc.events.hub import Subscription, SubscriptionOverflow
from pioneer_grpc.history.decide import LoadResult
from pioneer_grpc.providers.prefix import render_prefix
from pioneer_grpc.service.load_cache import LoadCache
from pioneer_grpc.store.port import HistoryState
from pioneer_grpc.v1 import chat_pb2, history_pb2, manifest_service_pb2, provider_service_pb2


def _response(size: int) -> manifest_service_pb2.WatchManifestsResponse:
    return manifest_service_pb2.WatchManifestsResponse()


async def test_a_subscription_is_bounded_in_bytes_as_well_as_events():
    subscription = Subscription("", capacity=100, max_bytes=1000)
    for _ in range(3):
        subscription.offer(_response(300), 300)
    assert subscription.pending_bytes == 900
    assert not subscription.overflowed
    subscription.offer(_response(300), 300)
    assert subscription.overflowed
    assert subscription.pending_bytes == 900
    with pytest.raises(SubscriptionOverflow):
        await subscription.next(0)


async def test_one_event_larger_than_the_bound_still_goes_to_an_idle_observer():
    subscription = Subscription("", capacity=100, max_bytes=1000)
    subscription.offer(_response(5000), 5000)
    assert not subscription.overflowed
    assert await subscription.next(0) is not None
    assert subscription.pending_bytes == 0


def _state(n: int) -> HistoryState:
    return HistoryState(
        max_context_tokens=1000,
        response_reserve_tokens=100,
        model="m",
        summary_model="",
        compaction_strategy=0,
        keep_tool_results=None,
        compaction_failed_sequence=None,
        compaction_trigger_percent=None,
        compaction_low_water_percent=None,
        clear_at_least_percent=None,
        dynamic_context_placement=0,
        summary_id=None,
        completed_count=n,
        completed_max_id=n,
    )


def _result(chars: int) -> LoadResult:
    message = chat_pb2.ChatMessage(role=chat_pb2.CHAT_ROLE_USER, content="z" * chars)
    return LoadResult(messages=[message], report=history_pb2.HistoryDecisionReport())


def _read(cache: LoadCache, key: tuple[str, str], n: int) -> bool:
    return cache.find(key[0], key[1], _state(n)) is not None


def test_the_load_cache_is_bounded_in_bytes():
    cache = LoadCache(size=1000, max_bytes=100_000)
    # What a full load read: no repairs, no entries of any turn, nothing more.
    snapshot = SimpleNamespace(repairs=(), entries=(), more_entries=False)
    for n in range(100):
        cache.store(f"t{n}", "", _state(n), snapshot, _result(10_000))
    assert cache.size_bytes <= 100_000
    assert 5 <= len(cache) <= 10
    # The newest are kept; the oldest went first.
    assert _read(cache, ("t99", ""), 99)
    assert not _read(cache, ("t0", ""), 0)
    # One answer larger than the whole bound is not kept at all.
    cache.store("big", "", _state(1), snapshot, _result(200_000))
    assert not _read(cache, ("big", ""), 1)
    assert cache.size_bytes <= 100_000


def test_a_provider_rendering_kept_with_a_load_counts_against_the_bound():
    cache = LoadCache(size=1000, max_bytes=100_000)
    snapshot = SimpleNamespace(repairs=(), entries=(), more_entries=False)
    for n in range(4):
        cache.store(f"t{n}", "", _state(n), snapshot, _result(20_000))
    one = cache.size_bytes // 4
    newest = cache.find("t3", "", _state(3))
    assert newest is not None
    anthropic = provider_service_pb2.PROVIDER_ANTHROPIC_MESSAGES
    prefix = newest.rendered_prefix(anthropic, "chat_request", render_prefix)
    assert prefix is not None
    assert prefix.rendered[0]["content"] == [{"type": "text", "text": "z" * 20_000}]
    # The rendering counts as the history's encoded size again: five answers' worth is
    # over the bound, so the least recently used answer went.
    assert cache.size_bytes == 4 * one
    assert len(cache) == 3
    assert cache.find("t0", "", _state(0)) is None
    # Built and counted once.
    assert newest.rendered_prefix(anthropic, "chat_request", render_prefix) is prefix
    assert cache.size_bytes == 4 * one


def test_a_replaced_answer_is_freed_when_it_is_replaced_not_by_a_full_collection():
    """A kept answer is replaced by every completed turn of its thread, and holds the whole history
    (messages, framed records, a provider's rendering): a reference cycle through it would keep every
    replaced one until a full collection, and RSS would saw up and down by tens of MB (issue 26)."""
    cache = LoadCache(size=1000, max_bytes=100_000)
    snapshot = SimpleNamespace(repairs=(), entries=(), more_entries=False)
    anthropic = provider_service_pb2.PROVIDER_ANTHROPIC_MESSAGES
    gc.disable()
    try:
        first = cache.store("t", "", _state(1), snapshot, _result(1_000))
        assert first.rendered_prefix(anthropic, "chat_request", render_prefix) is not None
        assert first.framed(1)
        replaced = weakref.ref(first)
        del first
        assert replaced() is not None  # kept by the cache
        cache.store("t", "", _state(2), snapshot, _result(1_000))
        assert replaced() is None
    finally:
        gc.enable()


def test_sixteen_agent_loops_on_long_threads_stay_kept_by_default():
    """Loops take their rounds in rotation: the default bound holds the answers of 16 threads of
    about 100k tokens (measured under the loop benchmark: 1.3 to 1.8 MB kept each, with the entries
    they were decided from and a rendered prefix), or every answer would leave before its thread's
    next round and each round would read and render the whole history."""
    cache = LoadCache()
    snapshot = SimpleNamespace(repairs=(), entries=(), more_entries=False)
    openai = provider_service_pb2.PROVIDER_OPENAI_CHAT_COMPLETIONS
    for n in range(16):
        cache.store(f"loop-{n}", "", _state(n), snapshot, _result(700_000))
        kept = cache.find(f"loop-{n}", "", _state(n))
        assert kept is not None
        assert kept.rendered_prefix(openai, "chat_request", render_prefix) is not None
    assert all(_read(cache, (f"loop-{n}", ""), n) for n in range(16)), len(cache)
