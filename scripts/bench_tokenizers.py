"""Append-time counting per tokenizer, against re-tokenizing the history on every load. One run, ratios.

    .venv/bin/python scripts/bench_tokenizers.py [--entries 200] [--rounds 5]

The entries are the texts of tests/data/token_corpus.jsonl (code, prose, 16
languages, tool arguments, tables), cycled to --entries. For each tokenizer
the server knows, it times counting each entry once (what an append does) and
counting the whole history again (what a load would do without stored
counts), in this process, after the encoding is loaded. The ratio says how
many appends' worth of counting one re-tokenizing load costs; a load with
stored counts adds integers instead (timed too).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from itertools import cycle, islice
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pioneer_grpc.history.tokens import TOKENIZERS, count_blocking, load_encoding_blocking  # noqa: E402

CORPUS = ROOT / "tests" / "data" / "token_corpus.jsonl"


def _best(fn, rounds: int) -> float:
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    texts = [json.loads(line)["text"] for line in CORPUS.read_text(encoding="utf-8").splitlines()]
    history = list(islice(cycle(texts), args.entries))
    chars = sum(map(len, history))
    print(f"history: {len(history)} entries, {chars} characters")
    print(
        f"{'tokenizer':<16} {'tokens':>8} {'append us/entry':>16} {'re-tokenize ms/load':>20} "
        f"{'stored-sum us/load':>19} {'load ratio':>11}"
    )
    for tokenizer in TOKENIZERS:
        print(_row(tokenizer, history, args.rounds))


def _row(tokenizer: str, history: list[str], rounds: int) -> str:
    load_encoding_blocking(tokenizer)
    counts = count_blocking(history, tokenizer)
    per_entry = statistics.median(
        _best(lambda t=text: count_blocking([t], tokenizer), rounds) for text in history[:50]
    )
    whole = _best(lambda: count_blocking(history, tokenizer), rounds)
    stored = _best(lambda: sum(counts), rounds)
    return (
        f"{tokenizer:<16} {sum(counts):>8} {per_entry * 1e6:>16.1f} {whole * 1e3:>20.2f} "
        f"{stored * 1e6:>19.2f} {whole / stored:>10.0f}x"
    )


if __name__ == "__main__":
    main()
