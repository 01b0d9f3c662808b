"""The budget decision of a history load, from stored token counts only.

Under the threshold (80% of the budget) the stored summary and every loaded
entry go. At or over it the thread's strategy compacts: old tool results are
cleared (`clearing.py`), a new summary replaces everything (`snapshot.py`), or
the newest whole turns that fit go (`truncate.py`, also the fallback when a
summary fails or is deferred). Every function returns the messages and the
report that explains them.
"""

from __future__ import annotations

from pioneer_grpc.history.diagnostics import diagnostic
from pioneer_grpc.history.snapshot import (
    LoadResult,
    Snapshot,
    Split,
    StoredSummary,
    full,
    split,
    summarized,
    summary_rejection,
)
from pioneer_grpc.history.truncate import pending, truncated

__all__ = [
    "LoadResult",
    "Snapshot",
    "Split",
    "StoredSummary",
    "diagnostic",
    "full",
    "pending",
    "split",
    "summarized",
    "summary_rejection",
    "truncated",
]
