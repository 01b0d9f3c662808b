"""A load's counts in its thread model's tokenizer: stored ones, else counted once and kept.

An entry carries the count made at append, in the tokenizer of its thread's model
then. A load budgets in the tokenizer of the thread's model now; when they differ
(the thread moved to a model of another family), the store gives the count it
keeps in the load's tokenizer, or, the first time, the entry is counted here and
the count handed back to the store to keep, so each entry is recounted once per
tokenizer, lazily, and a move back to the first family reads the append counts
again. The summary the load uses is treated the same way.
"""

from __future__ import annotations

from pioneer_grpc.history import tokens
from pioneer_grpc.history.render import entry_counted_texts, summary_text
from pioneer_grpc.store.port import KeptCounts, WholeRead


def fill_in(whole: WholeRead) -> tuple[int | None, KeptCounts]:
    """Counts in `whole.tokenizer` of what the store held none for, made here and set on the entries
    in place; the summary's count in it (None without a summary); and the counts to keep. Blocking."""
    tokenizer = whole.tokenizer
    counted: dict[int, int] = {}
    for entry in whole.entries:
        if entry.tokenizer != tokenizer:
            entry.token_count = counted[entry.sequence] = sum(
                tokens.count_blocking(entry_counted_texts(entry), tokenizer)
            )
            entry.tokenizer = tokenizer
    summary = whole.summary
    if summary is None:
        return None, KeptCounts(tokenizer, counted)
    if summary.tokenizer == tokenizer:
        return summary.token_count, KeptCounts(tokenizer, counted)
    [count] = tokens.count_blocking([summary_text(summary.text)], tokenizer)
    return count, KeptCounts(tokenizer, counted, (summary.summary_id, count))
