"""History diagnostic codes: what a load did instead of failing, and what it repaired.

The codes are part of the contract (listed on HistoryDecisionReport.diagnostics
in history.proto): clients match on them, so a code is never renamed.
"""

from __future__ import annotations

from pioneer_grpc.v1 import history_pb2

# Reading: more completed turns follow the summary than a load reads.
TURN_LIMIT_REACHED = "turn_limit_reached"
# Reading: entries of turns not completed yet (but the excluded one) were left out.
INCOMPLETE_TURNS_LEFT_OUT = "incomplete_turns_left_out"
# Counting: an image or document ref lacked the sizes its provider's rule needs; a default was counted.
ATTACHMENT_SIZE_ASSUMED = "attachment_size_assumed"

# Repairs of what older versions stored (appends refuse these now).
ORPHAN_TOOL_RESULT_DROPPED = "orphan_tool_result_dropped"
TOOL_RESULT_MISSING = "tool_result_missing"
EMPTY_ENTRY_SKIPPED = "empty_entry_skipped"
INVALID_TOOL_CALL_SKIPPED = "invalid_tool_call_skipped"
DUPLICATE_TOOL_CALL_SKIPPED = "duplicate_tool_call_skipped"
DUPLICATE_TOOL_RESULT_SKIPPED = "duplicate_tool_result_skipped"
TOOL_RESULT_NAME_REPAIRED = "tool_result_name_repaired"
TOOL_ARGUMENTS_REPAIRED = "tool_arguments_repaired"

# Compaction.
TOOL_RESULTS_CLEARED = "tool_results_cleared"
CLEARING_INSUFFICIENT = "clearing_insufficient"
COMPRESSION_PENDING = "compression_pending"
SUMMARIZER_FAILED = "summarizer_failed"
SUMMARY_REJECTED = "summary_rejected"
SUMMARY_LOCK_TIMEOUT = "summary_lock_timeout"
SUMMARY_STORED_MEANWHILE = "summary_stored_meanwhile"
COMPACTION_DEFERRED = "compaction_deferred"
# The turn cap (not the threshold) started the compaction.
TURN_CAP_COMPACTED = "turn_cap_compacted"

# Truncation.
SUMMARY_DROPPED = "summary_dropped"
ENTRY_TRUNCATED = "entry_truncated"
TOOL_PAIR_KEPT = "tool_pair_kept"
TURN_CUT = "turn_cut"


def diagnostic(code: str, message: str, entry_id: str | None = None) -> history_pb2.HistoryDiagnostic:
    found = history_pb2.HistoryDiagnostic(code=code, message=message)
    if entry_id:
        found.entry_id = entry_id
    return found
