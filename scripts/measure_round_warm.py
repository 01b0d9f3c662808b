"""A PrepareTurn round's pure steps timed warm, on the inputs of real rounds, beside the same loop.

    .venv/bin/python scripts/measure_round_warm.py [--repeat N]

Runs `scripts/measure_loop_steps.py`'s loop for 20 turns (its server in this process), keeps the
inputs of the last first round of a turn and of the last round inside one, then calls each step
again and again on them (`--repeat` times, after 20 unmeasured calls) and prints its p50: the
request's checks (`_checked_request`), the compile, counts and manifest (`_before_round`), the
provider body rendered (`_finished`, the runner's `then`) and written as JSON (`_encoded`, its
`after`). The same step in the loop (`measure_loop_steps.py`'s `unit _round: ...`) costs more:
there its data are cold and its output lands in fresh memory; the difference says how much of a
step is its own work and how much the memory it touches.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

import measure_loop_steps  # noqa: E402

from pioneer_grpc.service import turn  # noqa: E402
from pioneer_grpc.v1 import chat_pb2  # noqa: E402

KEPT: dict[str, tuple[Any, ...]] = {}


def _kind(request: Any) -> str:
    """The loop's first round of a turn carries the user's message; the round inside, two entries."""
    return "inside" if len(request.new_entries) > 1 else "first"


def _keep_inputs() -> None:
    before, finished = turn._before_round, turn._finished

    def kept_before(ctx: Any, request: Any, entries: Any, head: chat_pb2.ChatRequest) -> Any:
        copy = chat_pb2.ChatRequest()
        copy.CopyFrom(head)  # `_before_round` compiles into `head`: keep it as it came
        KEPT[_kind(request) + " before"] = (ctx, request, entries, copy)
        return before(ctx, request, entries, head)

    def kept_finished(ctx: Any, request: Any, head: Any, done: Any) -> Any:
        KEPT[_kind(request) + " finished"] = (ctx, request, head, done)
        return finished(ctx, request, head, done)

    turn._before_round = kept_before  # type: ignore[assignment]
    turn._finished = kept_finished  # type: ignore[assignment]


def p50_us(step: Callable[[], object], repeat: int) -> float:
    for _ in range(20):
        step()
    times = []
    for _ in range(repeat):
        began = time.perf_counter()
        step()
        times.append(time.perf_counter() - began)
    return statistics.median(times) * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repeat", type=int, default=400)
    args = parser.parse_args()
    before, finished = turn._before_round, turn._finished
    _keep_inputs()
    sys.argv = ["measure_loop_steps.py", "--turns", "20"]
    with contextlib.redirect_stdout(io.StringIO()):
        measure_loop_steps.main()
    print(f"{'step (warm, this process)':<48} {'first us':>9} {'inside us':>10}")
    rows: dict[str, dict[str, float]] = {}
    for kind in ("first", "inside"):
        ctx, request, entries, head = KEPT[f"{kind} before"]
        f_ctx, f_request, f_head, done = KEPT[f"{kind} finished"]

        def before_round(kept: tuple[Any, ...] = (ctx, request, entries, head)) -> object:
            fresh = chat_pb2.ChatRequest()
            fresh.CopyFrom(kept[3])
            return before(*kept[:3], fresh)

        rendered = finished(f_ctx, f_request, f_head, done)
        steps: dict[str, Callable[[], object]] = {
            "_checked_request (prepare)": lambda r=request, c=ctx: turn._checked_request(r, c.models),
            "_before_round (prepare)": before_round,
            "_finished (then)": lambda a=(f_ctx, f_request, f_head, done): finished(*a),
            "_encoded (after)": lambda r=rendered: turn._encoded(r),
        }
        for name, step in steps.items():
            rows.setdefault(name, {})[kind] = p50_us(step, args.repeat)
    for name, by_kind in rows.items():
        print(f"{name:<48} {by_kind['first']:>9.1f} {by_kind['inside']:>10.1f}")


if __name__ == "__main__":
    main()
