"""The agent loop, measured: `make bench`'s headline (docs/performance.md says what each figure is).

    .venv/bin/python scripts/bench_loop.py [--backend sqlite|postgresql|both]

Each loop (clients/go/bin/pioneer-load -rpc loop) is one thread seeded with the
realistic thread (50 completed turns of user / tool call / tool result / answer,
200 entries) on its own connection; a turn is PrepareTurn with the user's
message, PrepareTurn of the same turn with a tool call and its result, and
CompleteTurn carrying the final answer, as the example loops end a turn
(examples/agent_loop.py, clients/go/cmd/agentloop, clients/rust/examples/agentloop.rs).
One loop gives the latencies, 16 loops
the throughput, each against echoes of the same bytes sent by the same loops
after each block of measured turns, on the same server. Then LoadConversationHistory right after a
completed turn, against its echo and against LangChain's `trim_messages` with an
exact tiktoken counter, in process, on the same thread's messages.

Beside them, labelled (not the headline): one loop's echoes sent where its PrepareTurns go
(the first one's bytes right after a CompleteTurn, the inside one's right after the first
PrepareTurn), against the same echoes sent back to back right after; and the loop at its
turn cap. A thread seeded with MAX_LOADED_TURNS completed turns (smaller ones, about as many
tokens as the realistic thread in all), which its first load compacts, the loop's turns then
extending what was kept: one loop's step ratios against the same-bytes echo.
`--past-window-only` measures that figure alone (SQLite unless --backend names another);
`--screenshots-only` the loop with a screenshot in each tool result alone (a shape among SHAPES).
And labelled the same way, the loop truncating: that thread over its threshold with the truncate
strategy, its first load storing a mark down to the low-water mark (docs/performance.md);
`--truncating-only` measures it alone.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import grpc

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from bench_events import scratch_database, serve  # noqa: E402
from bench_inputs import loop_inputs  # noqa: E402

from pioneer_grpc.history.budget import MAX_LOADED_TURNS  # noqa: E402
from pioneer_grpc.v1 import (  # noqa: E402
    chat_pb2,
    common_pb2,
    history_pb2,
    history_service_pb2,
    history_service_pb2_grpc,
)

LOADER = ROOT / "clients" / "go" / "bin" / "pioneer-load"
# Measured turns per loop, in four blocks (each after the first led by one unmeasured turn): the
# seeded 50 grow to about 125 with one loop (with the loads after completed turns), to about 70
# each with 16. The turns that echo where a PrepareTurn goes have a thread of their own.
TURNS = {1: 40, 16: 12}

# (figure key, goal as text, predicate)
LOOP_GOALS = [
    ("first PrepareTurn p50 vs echo, 1 loop", "<= 2.5x", lambda v: v <= 2.5),
    ("inside PrepareTurn p50 vs echo, 1 loop", "<= 2x", lambda v: v <= 2),
    ("whole turn p50 vs two echoes, 1 loop", "<= 3x", lambda v: v <= 3),
    ("PrepareTurn throughput vs echo, 16 loops", ">= 0.2x", lambda v: v >= 0.2),
    ("load after completed turn p50 vs echo", "<= 2x", lambda v: v <= 2),
    ("trim_messages p50 / load p50", ">= 5x", lambda v: v >= 5),
]


# What each PrepareTurn asks for. The headline: the ChatRequest and the provider body, as the
# Python example loop asks (the threads' model is gpt-4o-mini). The others, labelled: the body
# alone (provider_body_only, a loop that only forwards the body), the ChatRequest alone (a loop
# with its own provider code, as the Go example), and the headline's requests with a 1280 x 800
# PNG in each tool result (a computer-use agent's loop; the history gains an image a turn).
# And the headline's requests with the final answer stored by an AppendEntries of its own before
# CompleteTurn (a loop that keeps the answer before it completes the turn: four calls a turn).
SCREENSHOTS = "screenshot in each tool result"
SHAPES = {
    "chat request and body": ["-provider", "openai-chat"],
    "body only": ["-provider", "openai-chat", "-provider-body-only"],
    "chat request only": [],
    SCREENSHOTS: ["-provider", "openai-chat", "-screenshot"],
    "answer appended before CompleteTurn": ["-provider", "openai-chat", "-append-answer"],
}
HEADLINE = "chat request and body"


def run_loop(
    address: str, loops: int, request_file: Path, shape: str = HEADLINE, thread: str = ""
) -> dict[str, Any]:
    args = [
        str(LOADER),
        "-addr",
        address,
        "-rpc",
        "loop",
        "-concurrency",
        str(loops),
        "-requests",
        str(TURNS[loops]),
        "-seed-entries",
        "200",
        "-input",
        str(request_file),
        *SHAPES[shape],
        *(["-thread", thread] if thread else []),
    ]
    proc = subprocess.run(args, capture_output=True, text=True, timeout=900)
    if proc.returncode != 0:
        raise RuntimeError(f"pioneer-load {' '.join(args[1:])} failed: {proc.stderr.strip()}")
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def _langchain_messages(messages: list[chat_pb2.ChatMessage]) -> list[Any]:
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

    out: list[Any] = []
    for m in messages:
        if m.role == chat_pb2.CHAT_ROLE_USER:
            out.append(HumanMessage(m.content))
        elif m.role == chat_pb2.CHAT_ROLE_ASSISTANT:
            calls = [
                {"name": c.name, "args": json.loads(c.arguments or "{}"), "id": c.id, "type": "tool_call"}
                for c in m.tool_calls
            ]
            out.append(AIMessage(m.content, tool_calls=calls))
        elif m.role == chat_pb2.CHAT_ROLE_TOOL:
            out.append(ToolMessage(m.content, tool_call_id=m.tool_call_id, name=m.name))
        else:
            out.append(SystemMessage(m.content))
    return out


def trim_messages_ms(messages: list[chat_pb2.ChatMessage], max_tokens: int, runs: int = 30) -> dict[str, Any]:
    """LangChain's trim_messages over the messages, every message counted exactly with tiktoken."""
    from langchain_core.messages import trim_messages

    from pioneer_grpc.history.tokens import load_encoding_blocking

    encoding = load_encoding_blocking()  # tiktoken's cl100k_base, shipped with the package

    def count(batch: list[Any]) -> int:
        total = 0
        for message in batch:
            total += 4 + len(encoding.encode(message.text))
            for call in getattr(message, "tool_calls", ()):
                total += len(encoding.encode(call["name"] + json.dumps(call["args"])))
        return total

    lc = _langchain_messages(messages)
    trim_messages(lc, max_tokens=max_tokens, token_counter=count, strategy="last")  # warm
    times = []
    for _ in range(runs):
        began = time.perf_counter()
        kept = trim_messages(lc, max_tokens=max_tokens, token_counter=count, strategy="last")
        times.append((time.perf_counter() - began) * 1000)
    return {"trim_p50_ms": round(statistics.median(times), 3), "trim_kept": len(kept), "messages": len(lc)}


async def thread_messages(address: str, thread_id: str) -> tuple[list[chat_pb2.ChatMessage], int]:
    async with grpc.aio.insecure_channel(address) as channel:
        history = history_service_pb2_grpc.HistoryServiceStub(channel)
        loaded = await history.LoadConversationHistory(
            history_service_pb2.LoadConversationHistoryRequest(thread_id=thread_id)
        )
    return list(loaded.messages), loaded.report.threshold_tokens


async def loop_figures(address: str, request_file: Path, backend: str) -> list[dict[str, Any]]:
    one = await asyncio.to_thread(run_loop, address, 1, request_file)
    many = await asyncio.to_thread(run_loop, address, 16, request_file)
    messages, threshold = await thread_messages(address, one["threads"][0])
    trim = await asyncio.to_thread(trim_messages_ms, messages, threshold)
    load_p50 = one["load_after_complete"]["p50_ms"]
    figures = {
        "first PrepareTurn p50 vs echo, 1 loop": one["first_prepare"]["p50_vs_echo"],
        "inside PrepareTurn p50 vs echo, 1 loop": one["inside_prepare"]["p50_vs_echo"],
        "whole turn p50 vs two echoes, 1 loop": one["turn_vs_two_echoes"],
        "first PrepareTurn p50 vs echo, 16 loops": many["first_prepare"]["p50_vs_echo"],
        "inside PrepareTurn p50 vs echo, 16 loops": many["inside_prepare"]["p50_vs_echo"],
        "PrepareTurn throughput vs echo, 16 loops": many["throughput_vs_echo"],
        "load after completed turn p50 vs echo": one["load_after_complete"]["p50_vs_echo"],
        "trim_messages p50 / load p50": round(trim["trim_p50_ms"] / load_p50, 2) if load_p50 else None,
    }
    for run in (one, many):
        run.pop("threads", None)
    return [
        {"figure": f"loop, {backend}, 1 loop", **one},
        {"figure": f"loop, {backend}, 16 loops", **many},
        {"figure": f"loop, {backend}, trim_messages", "load_p50_ms": load_p50, **trim},
        {"figure": f"loop, {backend}, 1 loop, {IN_PLACE} {LABEL}", **_in_loop(one)},
        {"figure": f"loop, {backend}, ratios", **figures},
        *[await shape_figures(address, request_file, backend, s) for s in SHAPES if s != HEADLINE],
        await past_window_figure(address, request_file, backend),
        await truncating_figure(address, request_file, backend),
    ]


IN_PLACE = "echo where a PrepareTurn goes"
LABEL = "(not the headline)"


def _in_loop(one: dict[str, Any]) -> dict[str, float]:
    """The same bytes' echo sent where each PrepareTurn goes, against the same echoes sent back to
    back right after (as the headline's are)."""
    echo = one["echo_in_loop"]
    return {
        "first echo p50 ms": echo["first"]["p50_ms"],
        "first echo back to back p50 ms": echo["first"]["echo_p50_ms"],
        "first echo p50 vs echo": echo["first"]["p50_vs_echo"],
        "inside echo p50 ms": echo["inside"]["p50_ms"],
        "inside echo back to back p50 ms": echo["inside"]["echo_p50_ms"],
        "inside echo p50 vs echo": echo["inside"]["p50_vs_echo"],
    }


def _step_ratios(one: dict[str, Any]) -> dict[str, float]:
    """One loop's step ratios against the echo, as every labelled figure reports them."""
    return {
        "first PrepareTurn p50 vs echo": one["first_prepare"]["p50_vs_echo"],
        "inside PrepareTurn p50 vs echo": one["inside_prepare"]["p50_vs_echo"],
        "whole turn p50 vs two echoes": one["turn_vs_two_echoes"],
    }


async def shape_figures(address: str, request_file: Path, backend: str, shape: str) -> dict[str, Any]:
    """The same loop asking for another response (not the headline): one loop's step ratios."""
    one = await asyncio.to_thread(run_loop, address, 1, request_file, shape)
    return {
        "figure": f"loop, {backend}, 1 loop, {shape} (not the headline)",
        "response_bytes": one["first_prepare"]["response_bytes"],
        "first_prepare_p50_ms": one["first_prepare"]["p50_ms"],
        "whole_turn_p50_ms": one["whole_turn"]["p50_ms"],
        **({"append_answer_p50_ms": one["append_answer"]["p50_ms"]} if "append_answer" in one else {}),
        "complete_turn_p50_ms": one["complete_turn"]["p50_ms"],
        **_step_ratios(one),
        "load after completed turn p50 vs echo": one["load_after_complete"]["p50_vs_echo"],
    }


# The thread past its window: MAX_LOADED_TURNS turns of a user message, a call to read_file, its
# result and the answer, words per entry as below (about 100,000 tokens in all, as the realistic
# thread of pioneer-load's -seed-entries 200), in a thread as pioneer-load creates.
PAST_WINDOW_WORDS = (30, 12, 190, 70)
VOCABULARY = (
    "the build fails in src/server/app.py because load_config returns None when the file is missing; "
    "we decided to keep the default path, add a fallback, and retry with exponential backoff. "
    "def parse(items: list[str]) -> dict[str, int]: return {k: len(k) for k in items} # 42 ms p99"
).split()


def _past_window_turn(n: int) -> list[history_pb2.ConversationEntry]:
    turn, rng = f"old-{n:04d}", random.Random(n)
    user, call, result, answer = (
        " ".join(rng.choice(VOCABULARY) for _ in range(words)) for words in PAST_WINDOW_WORDS
    )
    call_id = f"call_old_{n:04d}"
    tool_call = common_pb2.ToolCall(id=call_id, name="read_file", arguments=f'{{"path":"src/m_{n:04d}.py"}}')
    return [
        history_pb2.ConversationEntry(
            entry_id=f"{turn}-u", turn_id=turn, role=history_pb2.ENTRY_ROLE_USER, content=user
        ),
        history_pb2.ConversationEntry(
            entry_id=f"{turn}-c", turn_id=turn, role=history_pb2.ENTRY_ROLE_ASSISTANT, content=call,
            tool_calls=[tool_call],
        ),
        history_pb2.ConversationEntry(
            entry_id=f"{turn}-r", turn_id=turn, role=history_pb2.ENTRY_ROLE_TOOL, tool_call_id=call_id,
            name="read_file", content=result,
        ),
        history_pb2.ConversationEntry(
            entry_id=f"{turn}-a", turn_id=turn, role=history_pb2.ENTRY_ROLE_ASSISTANT, content=answer
        ),
    ]  # fmt: skip


PAST_WINDOW_CONFIG = history_pb2.ThreadConfig(
    model="gpt-4o-mini", max_context_tokens=400_000, response_reserve_tokens=16_000
)
# The same thread over its threshold (80% of 84,000 tokens), compacted by truncation: its first load
# stores a mark down to the low-water mark, and the turns after it extend the kept history.
TRUNCATING_CONFIG = history_pb2.ThreadConfig(
    model="gpt-4o-mini",
    max_context_tokens=100_000,
    response_reserve_tokens=16_000,
    compaction_strategy=history_pb2.COMPACTION_STRATEGY_TRUNCATE,
)


async def seed_past_window(
    address: str, config: history_pb2.ThreadConfig = PAST_WINDOW_CONFIG
) -> tuple[str, history_pb2.HistoryDecisionReport]:
    """A thread holding MAX_LOADED_TURNS completed turns, and its history's report."""
    async with grpc.aio.insecure_channel(address) as channel:
        history = history_service_pb2_grpc.HistoryServiceStub(channel)
        created = await history.CreateThread(history_service_pb2.CreateThreadRequest(config=config))
        thread = created.thread.thread_id
        for n in range(MAX_LOADED_TURNS):
            entries = _past_window_turn(n)
            await history.AppendEntries(
                history_service_pb2.AppendEntriesRequest(thread_id=thread, entries=entries, counts_only=True)
            )
            await history.CompleteTurn(
                history_service_pb2.CompleteTurnRequest(thread_id=thread, turn_id=entries[0].turn_id)
            )
        loaded = await history.LoadConversationHistory(
            history_service_pb2.LoadConversationHistoryRequest(thread_id=thread)
        )
    return thread, loaded.report


async def past_window_figure(address: str, request_file: Path, backend: str) -> dict[str, Any]:
    """The loop on a thread at its turn cap: its first load compacts it (the older turns summarized,
    the newest 100 at most kept), and the loop's turns then extend what was kept."""
    thread, report = await seed_past_window(address)
    if report.decision != history_pb2.HISTORY_DECISION_SUMMARIZED:
        raise RuntimeError(f"the thread at its turn cap is not compacted: {report}")
    one = await asyncio.to_thread(run_loop, address, 1, request_file, HEADLINE, thread)
    return {
        "figure": f"loop past the window, {backend}, 1 loop (not the headline)",
        "history_turns": MAX_LOADED_TURNS,
        "history_tokens": report.tokens_after,
        "first_prepare_p50_ms": one["first_prepare"]["p50_ms"],
        **_step_ratios(one),
    }


async def truncating_figure(address: str, request_file: Path, backend: str) -> dict[str, Any]:
    """The loop on the thread past its window, over its threshold, with the truncate strategy."""
    thread, report = await seed_past_window(address, TRUNCATING_CONFIG)
    if report.decision != history_pb2.HISTORY_DECISION_TRUNCATED:
        raise RuntimeError(f"the truncating thread does not load truncated: {report}")
    one = await asyncio.to_thread(run_loop, address, 1, request_file, HEADLINE, thread)
    return {
        "figure": f"loop truncating, {backend}, 1 loop (not the headline)",
        "history_turns": MAX_LOADED_TURNS,
        "history_tokens_before": report.tokens_before,
        "history_tokens_after": report.tokens_after,
        "entries_kept": report.entries_kept,
        "first_prepare_p50_ms": one["first_prepare"]["p50_ms"],
        "inside_prepare_p50_ms": one["inside_prepare"]["p50_ms"],
        "whole_turn_p50_ms": one["whole_turn"]["p50_ms"],
        "load_after_complete_p50_ms": one["load_after_complete"]["p50_ms"],
        **_step_ratios(one),
    }


def loop_goal_lines(results: list[dict[str, Any]]) -> list[str]:
    lines = []
    for result in results:
        figure = str(result.get("figure", ""))
        if not figure.endswith(", ratios"):
            continue
        backend = figure.split(", ")[1]
        for key, goal, met in LOOP_GOALS:
            value = result.get(key)
            verdict = "not measured" if value is None else ("met" if met(value) else "NOT met")
            lines.append(f"{backend:10s} {key:45s} {value!s:>8}  goal {goal:8s} {verdict}")
        in_place_figure = f"loop, {backend}, 1 loop, {IN_PLACE} {LABEL}"
        in_place = next((r for r in results if r.get("figure") == in_place_figure), None)
        for step in ("first", "inside") if in_place is not None else ():
            key, value = f"{step} echo in its place vs back to back", in_place[f"{step} echo p50 vs echo"]
            lines.append(f"{backend:10s} {key:45s} {value!s:>8}  (not a goal)")
    return lines


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--backend", choices=("sqlite", "postgresql", "both"), default="both")
    parser.add_argument(
        "--past-window-only",
        action="store_true",
        help="the loop past its window alone (SQLite unless --backend says otherwise)",
    )
    parser.add_argument(
        "--screenshots-only",
        action="store_true",
        help="the loop with a screenshot in each tool result alone (SQLite unless --backend says otherwise)",
    )
    parser.add_argument(
        "--truncating-only",
        action="store_true",
        help="the loop on a thread that truncates every turn alone (SQLite unless --backend says otherwise)",
    )
    args = parser.parse_args()
    from bench import start_postgres, stop_postgres

    async def figures(address: str, request_file: Path, backend: str) -> list[dict[str, Any]]:
        if args.past_window_only:
            return [await past_window_figure(address, request_file, backend)]
        if args.truncating_only:
            return [await truncating_figure(address, request_file, backend)]
        if args.screenshots_only:
            return [await shape_figures(address, request_file, backend, SCREENSHOTS)]
        return await loop_figures(address, request_file, backend)

    alone = args.past_window_only or args.truncating_only or args.screenshots_only
    backend = "sqlite" if alone and "--backend" not in sys.argv else args.backend
    results: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="pioneer-bench-loop-") as tmp:
        home, request_file = loop_inputs(Path(tmp))
        if backend in ("sqlite", "both"):
            async with serve(f"sqlite+aiosqlite:///{Path(tmp) / 'loop.db'}", home) as address:
                results += await figures(address, request_file, "sqlite")
        if backend in ("postgresql", "both"):
            cluster = Path(tempfile.mkdtemp(prefix="pioneer-bench-pg-", dir="/tmp"))
            try:
                admin_url = os.environ.get("PIONEER_BENCH_PG_URL", "")
                admin_url = admin_url or await asyncio.to_thread(start_postgres, cluster)
                async with scratch_database(admin_url) as url, serve(url, home) as address:
                    results += await figures(address, request_file, "postgresql")
            finally:
                await asyncio.to_thread(stop_postgres, cluster)
    for result in results:
        print(json.dumps(result))
    print("\n".join(loop_goal_lines(results)))


if __name__ == "__main__":
    asyncio.run(main())
