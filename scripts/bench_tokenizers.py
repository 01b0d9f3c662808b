"""Append-time counting per tokenizer, against re-tokenizing the history on every load. One run, ratios.

    .venv/bin/python scripts/bench_tokenizers.py [--entries 200] [--rounds 5]

The entries are the texts of tests/data/token_corpus.jsonl (code, prose, 16
languages, tool arguments, tables), cycled to --entries. For each tokenizer
the server knows, it times counting each entry once (what an append does) and
counting the whole history again (what a load would do without stored
counts), in this process, after the encoding is loaded. The ratio says how
many appends' worth of counting one re-tokenizing load costs; a load with
stored counts adds integers instead (timed too). A thread that moves to a model
of another family pays one re-tokenizing load, once (service/load_counts.py).

Last, the images and documents a load adds to the stored counts: every entry with
one sized image and one PDF ref, counted by each provider's rule (arithmetic on
the refs, done on every uncached load).
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
from pioneer_grpc.models.attachments import attachment_tokens  # noqa: E402
from pioneer_grpc.models.registry import packaged_registry  # noqa: E402
from pioneer_grpc.v1 import common_pb2  # noqa: E402

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
    print(f"{'image rule of':<20} {'tokens':>8} {'attachments us/load':>20}")
    for model in ("gpt-4o", "gpt-4.1-mini", "claude-sonnet-4-5", "gemini-2.5-pro"):
        print(_attachments_row(model, len(history), args.rounds))


def _attachments_row(model: str, entries: int, rounds: int) -> str:
    rule = packaged_registry().image_rule(model)
    refs = [
        [
            common_pb2.ArtifactRef(artifact_id=f"i{i}", mime_type="image/png", width_px=1280, height_px=720),
            common_pb2.ArtifactRef(artifact_id=f"doc{i}", mime_type="application/pdf", page_count=4),
        ]
        for i in range(entries)
    ]
    total = sum(attachment_tokens(rule, each).tokens for each in refs)
    seconds = _best(lambda: [attachment_tokens(rule, each) for each in refs], rounds)
    return f"{model:<20} {total:>8} {seconds * 1e6:>20.1f}"


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
