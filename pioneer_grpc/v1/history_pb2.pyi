import datetime

from google.api import field_behavior_pb2 as _field_behavior_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from pioneer_grpc.v1 import chat_pb2 as _chat_pb2
from pioneer_grpc.v1 import common_pb2 as _common_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class CompactionStrategy(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    COMPACTION_STRATEGY_UNSPECIFIED: _ClassVar[CompactionStrategy]
    COMPACTION_STRATEGY_CLEAR_THEN_SUMMARIZE: _ClassVar[CompactionStrategy]
    COMPACTION_STRATEGY_SUMMARIZE: _ClassVar[CompactionStrategy]
    COMPACTION_STRATEGY_TRUNCATE: _ClassVar[CompactionStrategy]

class EntryRole(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    ENTRY_ROLE_UNSPECIFIED: _ClassVar[EntryRole]
    ENTRY_ROLE_USER: _ClassVar[EntryRole]
    ENTRY_ROLE_ASSISTANT: _ClassVar[EntryRole]
    ENTRY_ROLE_TOOL: _ClassVar[EntryRole]
    ENTRY_ROLE_SYSTEM: _ClassVar[EntryRole]

class TurnStatus(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    TURN_STATUS_UNSPECIFIED: _ClassVar[TurnStatus]
    TURN_STATUS_IN_PROGRESS: _ClassVar[TurnStatus]
    TURN_STATUS_COMPLETED: _ClassVar[TurnStatus]

class HistoryDecision(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    HISTORY_DECISION_UNSPECIFIED: _ClassVar[HistoryDecision]
    HISTORY_DECISION_FULL: _ClassVar[HistoryDecision]
    HISTORY_DECISION_SUMMARIZED: _ClassVar[HistoryDecision]
    HISTORY_DECISION_TRUNCATED: _ClassVar[HistoryDecision]
    HISTORY_DECISION_CLEARED: _ClassVar[HistoryDecision]

class SummaryUse(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SUMMARY_USE_UNSPECIFIED: _ClassVar[SummaryUse]
    SUMMARY_USE_NONE: _ClassVar[SummaryUse]
    SUMMARY_USE_REUSED: _ClassVar[SummaryUse]
    SUMMARY_USE_CREATED: _ClassVar[SummaryUse]
    SUMMARY_USE_FAILED: _ClassVar[SummaryUse]

class PrefixBreakCause(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    PREFIX_BREAK_CAUSE_UNSPECIFIED: _ClassVar[PrefixBreakCause]
    PREFIX_BREAK_CAUSE_SECTION: _ClassVar[PrefixBreakCause]
    PREFIX_BREAK_CAUSE_SUMMARY: _ClassVar[PrefixBreakCause]
    PREFIX_BREAK_CAUSE_CLEARING: _ClassVar[PrefixBreakCause]
    PREFIX_BREAK_CAUSE_TURN_CAP: _ClassVar[PrefixBreakCause]
    PREFIX_BREAK_CAUSE_TRUNCATION: _ClassVar[PrefixBreakCause]
    PREFIX_BREAK_CAUSE_TOOLS: _ClassVar[PrefixBreakCause]
    PREFIX_BREAK_CAUSE_MODEL: _ClassVar[PrefixBreakCause]
    PREFIX_BREAK_CAUSE_RENDERING: _ClassVar[PrefixBreakCause]
    PREFIX_BREAK_CAUSE_HISTORY: _ClassVar[PrefixBreakCause]
COMPACTION_STRATEGY_UNSPECIFIED: CompactionStrategy
COMPACTION_STRATEGY_CLEAR_THEN_SUMMARIZE: CompactionStrategy
COMPACTION_STRATEGY_SUMMARIZE: CompactionStrategy
COMPACTION_STRATEGY_TRUNCATE: CompactionStrategy
ENTRY_ROLE_UNSPECIFIED: EntryRole
ENTRY_ROLE_USER: EntryRole
ENTRY_ROLE_ASSISTANT: EntryRole
ENTRY_ROLE_TOOL: EntryRole
ENTRY_ROLE_SYSTEM: EntryRole
TURN_STATUS_UNSPECIFIED: TurnStatus
TURN_STATUS_IN_PROGRESS: TurnStatus
TURN_STATUS_COMPLETED: TurnStatus
HISTORY_DECISION_UNSPECIFIED: HistoryDecision
HISTORY_DECISION_FULL: HistoryDecision
HISTORY_DECISION_SUMMARIZED: HistoryDecision
HISTORY_DECISION_TRUNCATED: HistoryDecision
HISTORY_DECISION_CLEARED: HistoryDecision
SUMMARY_USE_UNSPECIFIED: SummaryUse
SUMMARY_USE_NONE: SummaryUse
SUMMARY_USE_REUSED: SummaryUse
SUMMARY_USE_CREATED: SummaryUse
SUMMARY_USE_FAILED: SummaryUse
PREFIX_BREAK_CAUSE_UNSPECIFIED: PrefixBreakCause
PREFIX_BREAK_CAUSE_SECTION: PrefixBreakCause
PREFIX_BREAK_CAUSE_SUMMARY: PrefixBreakCause
PREFIX_BREAK_CAUSE_CLEARING: PrefixBreakCause
PREFIX_BREAK_CAUSE_TURN_CAP: PrefixBreakCause
PREFIX_BREAK_CAUSE_TRUNCATION: PrefixBreakCause
PREFIX_BREAK_CAUSE_TOOLS: PrefixBreakCause
PREFIX_BREAK_CAUSE_MODEL: PrefixBreakCause
PREFIX_BREAK_CAUSE_RENDERING: PrefixBreakCause
PREFIX_BREAK_CAUSE_HISTORY: PrefixBreakCause

class ThreadConfig(_message.Message):
    __slots__ = ("max_context_tokens", "response_reserve_tokens", "model", "summary_model", "compaction_strategy", "keep_tool_results", "compaction_trigger_percent", "compaction_low_water_percent", "clear_at_least_percent", "dynamic_context_placement", "retention_days")
    MAX_CONTEXT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    RESPONSE_RESERVE_TOKENS_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    SUMMARY_MODEL_FIELD_NUMBER: _ClassVar[int]
    COMPACTION_STRATEGY_FIELD_NUMBER: _ClassVar[int]
    KEEP_TOOL_RESULTS_FIELD_NUMBER: _ClassVar[int]
    COMPACTION_TRIGGER_PERCENT_FIELD_NUMBER: _ClassVar[int]
    COMPACTION_LOW_WATER_PERCENT_FIELD_NUMBER: _ClassVar[int]
    CLEAR_AT_LEAST_PERCENT_FIELD_NUMBER: _ClassVar[int]
    DYNAMIC_CONTEXT_PLACEMENT_FIELD_NUMBER: _ClassVar[int]
    RETENTION_DAYS_FIELD_NUMBER: _ClassVar[int]
    max_context_tokens: int
    response_reserve_tokens: int
    model: str
    summary_model: str
    compaction_strategy: CompactionStrategy
    keep_tool_results: int
    compaction_trigger_percent: int
    compaction_low_water_percent: int
    clear_at_least_percent: int
    dynamic_context_placement: _chat_pb2.DynamicContextPlacement
    retention_days: int
    def __init__(self, max_context_tokens: _Optional[int] = ..., response_reserve_tokens: _Optional[int] = ..., model: _Optional[str] = ..., summary_model: _Optional[str] = ..., compaction_strategy: _Optional[_Union[CompactionStrategy, str]] = ..., keep_tool_results: _Optional[int] = ..., compaction_trigger_percent: _Optional[int] = ..., compaction_low_water_percent: _Optional[int] = ..., clear_at_least_percent: _Optional[int] = ..., dynamic_context_placement: _Optional[_Union[_chat_pb2.DynamicContextPlacement, str]] = ..., retention_days: _Optional[int] = ...) -> None: ...

class Thread(_message.Message):
    __slots__ = ("thread_id", "config", "create_time", "update_time", "entry_count", "tenant", "etag")
    THREAD_ID_FIELD_NUMBER: _ClassVar[int]
    CONFIG_FIELD_NUMBER: _ClassVar[int]
    CREATE_TIME_FIELD_NUMBER: _ClassVar[int]
    UPDATE_TIME_FIELD_NUMBER: _ClassVar[int]
    ENTRY_COUNT_FIELD_NUMBER: _ClassVar[int]
    TENANT_FIELD_NUMBER: _ClassVar[int]
    ETAG_FIELD_NUMBER: _ClassVar[int]
    thread_id: str
    config: ThreadConfig
    create_time: _timestamp_pb2.Timestamp
    update_time: _timestamp_pb2.Timestamp
    entry_count: int
    tenant: str
    etag: str
    def __init__(self, thread_id: _Optional[str] = ..., config: _Optional[_Union[ThreadConfig, _Mapping]] = ..., create_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., update_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., entry_count: _Optional[int] = ..., tenant: _Optional[str] = ..., etag: _Optional[str] = ...) -> None: ...

class ConversationEntry(_message.Message):
    __slots__ = ("entry_id", "turn_id", "role", "content", "tool_calls", "tool_call_id", "name", "artifact_refs", "reasoning_content", "sequence", "token_count", "tokenizer", "completed", "create_time", "content_parts", "is_error")
    ENTRY_ID_FIELD_NUMBER: _ClassVar[int]
    TURN_ID_FIELD_NUMBER: _ClassVar[int]
    ROLE_FIELD_NUMBER: _ClassVar[int]
    CONTENT_FIELD_NUMBER: _ClassVar[int]
    TOOL_CALLS_FIELD_NUMBER: _ClassVar[int]
    TOOL_CALL_ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    ARTIFACT_REFS_FIELD_NUMBER: _ClassVar[int]
    REASONING_CONTENT_FIELD_NUMBER: _ClassVar[int]
    SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    TOKEN_COUNT_FIELD_NUMBER: _ClassVar[int]
    TOKENIZER_FIELD_NUMBER: _ClassVar[int]
    COMPLETED_FIELD_NUMBER: _ClassVar[int]
    CREATE_TIME_FIELD_NUMBER: _ClassVar[int]
    CONTENT_PARTS_FIELD_NUMBER: _ClassVar[int]
    IS_ERROR_FIELD_NUMBER: _ClassVar[int]
    entry_id: str
    turn_id: str
    role: EntryRole
    content: str
    tool_calls: _containers.RepeatedCompositeFieldContainer[_common_pb2.ToolCall]
    tool_call_id: str
    name: str
    artifact_refs: _containers.RepeatedCompositeFieldContainer[_common_pb2.ArtifactRef]
    reasoning_content: str
    sequence: int
    token_count: int
    tokenizer: str
    completed: bool
    create_time: _timestamp_pb2.Timestamp
    content_parts: _containers.RepeatedCompositeFieldContainer[_chat_pb2.ContentPart]
    is_error: bool
    def __init__(self, entry_id: _Optional[str] = ..., turn_id: _Optional[str] = ..., role: _Optional[_Union[EntryRole, str]] = ..., content: _Optional[str] = ..., tool_calls: _Optional[_Iterable[_Union[_common_pb2.ToolCall, _Mapping]]] = ..., tool_call_id: _Optional[str] = ..., name: _Optional[str] = ..., artifact_refs: _Optional[_Iterable[_Union[_common_pb2.ArtifactRef, _Mapping]]] = ..., reasoning_content: _Optional[str] = ..., sequence: _Optional[int] = ..., token_count: _Optional[int] = ..., tokenizer: _Optional[str] = ..., completed: _Optional[bool] = ..., create_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., content_parts: _Optional[_Iterable[_Union[_chat_pb2.ContentPart, _Mapping]]] = ..., is_error: _Optional[bool] = ...) -> None: ...

class ThreadSummary(_message.Message):
    __slots__ = ("thread_id", "text", "covers_through_entry_id", "covers_through_sequence", "token_count", "model", "create_time", "summarizer")
    THREAD_ID_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    COVERS_THROUGH_ENTRY_ID_FIELD_NUMBER: _ClassVar[int]
    COVERS_THROUGH_SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    TOKEN_COUNT_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    CREATE_TIME_FIELD_NUMBER: _ClassVar[int]
    SUMMARIZER_FIELD_NUMBER: _ClassVar[int]
    thread_id: str
    text: str
    covers_through_entry_id: str
    covers_through_sequence: int
    token_count: int
    model: str
    create_time: _timestamp_pb2.Timestamp
    summarizer: str
    def __init__(self, thread_id: _Optional[str] = ..., text: _Optional[str] = ..., covers_through_entry_id: _Optional[str] = ..., covers_through_sequence: _Optional[int] = ..., token_count: _Optional[int] = ..., model: _Optional[str] = ..., create_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., summarizer: _Optional[str] = ...) -> None: ...

class HistoryDiagnostic(_message.Message):
    __slots__ = ("code", "message", "entry_id")
    CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    ENTRY_ID_FIELD_NUMBER: _ClassVar[int]
    code: str
    message: str
    entry_id: str
    def __init__(self, code: _Optional[str] = ..., message: _Optional[str] = ..., entry_id: _Optional[str] = ...) -> None: ...

class HistoryDecisionReport(_message.Message):
    __slots__ = ("decision", "budget_tokens", "threshold_tokens", "summary_target_tokens", "tokens_before", "tokens_after", "entries_loaded", "entries_kept", "entries_dropped", "summary_use", "summarizer", "summary_covers_through_entry_id", "diagnostics", "tokenizer", "cleared_tool_results", "cleared_tokens_saved", "compaction_strategy", "token_counts_exact", "model_known", "low_water_tokens", "prefix_break")
    DECISION_FIELD_NUMBER: _ClassVar[int]
    BUDGET_TOKENS_FIELD_NUMBER: _ClassVar[int]
    THRESHOLD_TOKENS_FIELD_NUMBER: _ClassVar[int]
    SUMMARY_TARGET_TOKENS_FIELD_NUMBER: _ClassVar[int]
    TOKENS_BEFORE_FIELD_NUMBER: _ClassVar[int]
    TOKENS_AFTER_FIELD_NUMBER: _ClassVar[int]
    ENTRIES_LOADED_FIELD_NUMBER: _ClassVar[int]
    ENTRIES_KEPT_FIELD_NUMBER: _ClassVar[int]
    ENTRIES_DROPPED_FIELD_NUMBER: _ClassVar[int]
    SUMMARY_USE_FIELD_NUMBER: _ClassVar[int]
    SUMMARIZER_FIELD_NUMBER: _ClassVar[int]
    SUMMARY_COVERS_THROUGH_ENTRY_ID_FIELD_NUMBER: _ClassVar[int]
    DIAGNOSTICS_FIELD_NUMBER: _ClassVar[int]
    TOKENIZER_FIELD_NUMBER: _ClassVar[int]
    CLEARED_TOOL_RESULTS_FIELD_NUMBER: _ClassVar[int]
    CLEARED_TOKENS_SAVED_FIELD_NUMBER: _ClassVar[int]
    COMPACTION_STRATEGY_FIELD_NUMBER: _ClassVar[int]
    TOKEN_COUNTS_EXACT_FIELD_NUMBER: _ClassVar[int]
    MODEL_KNOWN_FIELD_NUMBER: _ClassVar[int]
    LOW_WATER_TOKENS_FIELD_NUMBER: _ClassVar[int]
    PREFIX_BREAK_FIELD_NUMBER: _ClassVar[int]
    decision: HistoryDecision
    budget_tokens: int
    threshold_tokens: int
    summary_target_tokens: int
    tokens_before: int
    tokens_after: int
    entries_loaded: int
    entries_kept: int
    entries_dropped: int
    summary_use: SummaryUse
    summarizer: str
    summary_covers_through_entry_id: str
    diagnostics: _containers.RepeatedCompositeFieldContainer[HistoryDiagnostic]
    tokenizer: str
    cleared_tool_results: _containers.RepeatedCompositeFieldContainer[ClearedToolResult]
    cleared_tokens_saved: int
    compaction_strategy: CompactionStrategy
    token_counts_exact: bool
    model_known: bool
    low_water_tokens: int
    prefix_break: PrefixBreak
    def __init__(self, decision: _Optional[_Union[HistoryDecision, str]] = ..., budget_tokens: _Optional[int] = ..., threshold_tokens: _Optional[int] = ..., summary_target_tokens: _Optional[int] = ..., tokens_before: _Optional[int] = ..., tokens_after: _Optional[int] = ..., entries_loaded: _Optional[int] = ..., entries_kept: _Optional[int] = ..., entries_dropped: _Optional[int] = ..., summary_use: _Optional[_Union[SummaryUse, str]] = ..., summarizer: _Optional[str] = ..., summary_covers_through_entry_id: _Optional[str] = ..., diagnostics: _Optional[_Iterable[_Union[HistoryDiagnostic, _Mapping]]] = ..., tokenizer: _Optional[str] = ..., cleared_tool_results: _Optional[_Iterable[_Union[ClearedToolResult, _Mapping]]] = ..., cleared_tokens_saved: _Optional[int] = ..., compaction_strategy: _Optional[_Union[CompactionStrategy, str]] = ..., token_counts_exact: _Optional[bool] = ..., model_known: _Optional[bool] = ..., low_water_tokens: _Optional[int] = ..., prefix_break: _Optional[_Union[PrefixBreak, _Mapping]] = ...) -> None: ...

class PrefixBreak(_message.Message):
    __slots__ = ("cause", "section_id", "entry_id", "tokens_invalidated", "tokens_kept", "entry_ids", "entry_count")
    CAUSE_FIELD_NUMBER: _ClassVar[int]
    SECTION_ID_FIELD_NUMBER: _ClassVar[int]
    ENTRY_ID_FIELD_NUMBER: _ClassVar[int]
    TOKENS_INVALIDATED_FIELD_NUMBER: _ClassVar[int]
    TOKENS_KEPT_FIELD_NUMBER: _ClassVar[int]
    ENTRY_IDS_FIELD_NUMBER: _ClassVar[int]
    ENTRY_COUNT_FIELD_NUMBER: _ClassVar[int]
    cause: PrefixBreakCause
    section_id: str
    entry_id: str
    tokens_invalidated: int
    tokens_kept: int
    entry_ids: _containers.RepeatedScalarFieldContainer[str]
    entry_count: int
    def __init__(self, cause: _Optional[_Union[PrefixBreakCause, str]] = ..., section_id: _Optional[str] = ..., entry_id: _Optional[str] = ..., tokens_invalidated: _Optional[int] = ..., tokens_kept: _Optional[int] = ..., entry_ids: _Optional[_Iterable[str]] = ..., entry_count: _Optional[int] = ...) -> None: ...

class ClearedToolResult(_message.Message):
    __slots__ = ("entry_id", "tool_call_id", "name", "tokens_before", "tokens_after")
    ENTRY_ID_FIELD_NUMBER: _ClassVar[int]
    TOOL_CALL_ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    TOKENS_BEFORE_FIELD_NUMBER: _ClassVar[int]
    TOKENS_AFTER_FIELD_NUMBER: _ClassVar[int]
    entry_id: str
    tool_call_id: str
    name: str
    tokens_before: int
    tokens_after: int
    def __init__(self, entry_id: _Optional[str] = ..., tool_call_id: _Optional[str] = ..., name: _Optional[str] = ..., tokens_before: _Optional[int] = ..., tokens_after: _Optional[int] = ...) -> None: ...

class Turn(_message.Message):
    __slots__ = ("thread_id", "turn_id", "status", "entry_count", "manifest_event_id", "create_time", "update_time")
    THREAD_ID_FIELD_NUMBER: _ClassVar[int]
    TURN_ID_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    ENTRY_COUNT_FIELD_NUMBER: _ClassVar[int]
    MANIFEST_EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    CREATE_TIME_FIELD_NUMBER: _ClassVar[int]
    UPDATE_TIME_FIELD_NUMBER: _ClassVar[int]
    thread_id: str
    turn_id: str
    status: TurnStatus
    entry_count: int
    manifest_event_id: int
    create_time: _timestamp_pb2.Timestamp
    update_time: _timestamp_pb2.Timestamp
    def __init__(self, thread_id: _Optional[str] = ..., turn_id: _Optional[str] = ..., status: _Optional[_Union[TurnStatus, str]] = ..., entry_count: _Optional[int] = ..., manifest_event_id: _Optional[int] = ..., create_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., update_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...
