from google.api import field_behavior_pb2 as _field_behavior_pb2
from google.protobuf import field_mask_pb2 as _field_mask_pb2
from pioneer_grpc.v1 import chat_pb2 as _chat_pb2
from pioneer_grpc.v1 import history_pb2 as _history_pb2
from pioneer_grpc.v1 import usage_pb2 as _usage_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class CreateThreadRequest(_message.Message):
    __slots__ = ("thread_id", "config")
    THREAD_ID_FIELD_NUMBER: _ClassVar[int]
    CONFIG_FIELD_NUMBER: _ClassVar[int]
    thread_id: str
    config: _history_pb2.ThreadConfig
    def __init__(self, thread_id: _Optional[str] = ..., config: _Optional[_Union[_history_pb2.ThreadConfig, _Mapping]] = ...) -> None: ...

class CreateThreadResponse(_message.Message):
    __slots__ = ("thread",)
    THREAD_FIELD_NUMBER: _ClassVar[int]
    thread: _history_pb2.Thread
    def __init__(self, thread: _Optional[_Union[_history_pb2.Thread, _Mapping]] = ...) -> None: ...

class GetThreadRequest(_message.Message):
    __slots__ = ("thread_id",)
    THREAD_ID_FIELD_NUMBER: _ClassVar[int]
    thread_id: str
    def __init__(self, thread_id: _Optional[str] = ...) -> None: ...

class GetThreadResponse(_message.Message):
    __slots__ = ("thread",)
    THREAD_FIELD_NUMBER: _ClassVar[int]
    thread: _history_pb2.Thread
    def __init__(self, thread: _Optional[_Union[_history_pb2.Thread, _Mapping]] = ...) -> None: ...

class UpdateThreadRequest(_message.Message):
    __slots__ = ("thread_id", "config", "update_mask")
    THREAD_ID_FIELD_NUMBER: _ClassVar[int]
    CONFIG_FIELD_NUMBER: _ClassVar[int]
    UPDATE_MASK_FIELD_NUMBER: _ClassVar[int]
    thread_id: str
    config: _history_pb2.ThreadConfig
    update_mask: _field_mask_pb2.FieldMask
    def __init__(self, thread_id: _Optional[str] = ..., config: _Optional[_Union[_history_pb2.ThreadConfig, _Mapping]] = ..., update_mask: _Optional[_Union[_field_mask_pb2.FieldMask, _Mapping]] = ...) -> None: ...

class UpdateThreadResponse(_message.Message):
    __slots__ = ("thread",)
    THREAD_FIELD_NUMBER: _ClassVar[int]
    thread: _history_pb2.Thread
    def __init__(self, thread: _Optional[_Union[_history_pb2.Thread, _Mapping]] = ...) -> None: ...

class AppendEntriesRequest(_message.Message):
    __slots__ = ("thread_id", "entries", "counts_only")
    THREAD_ID_FIELD_NUMBER: _ClassVar[int]
    ENTRIES_FIELD_NUMBER: _ClassVar[int]
    COUNTS_ONLY_FIELD_NUMBER: _ClassVar[int]
    thread_id: str
    entries: _containers.RepeatedCompositeFieldContainer[_history_pb2.ConversationEntry]
    counts_only: bool
    def __init__(self, thread_id: _Optional[str] = ..., entries: _Optional[_Iterable[_Union[_history_pb2.ConversationEntry, _Mapping]]] = ..., counts_only: _Optional[bool] = ...) -> None: ...

class AppendEntriesResponse(_message.Message):
    __slots__ = ("entries", "created_count", "existing_count")
    ENTRIES_FIELD_NUMBER: _ClassVar[int]
    CREATED_COUNT_FIELD_NUMBER: _ClassVar[int]
    EXISTING_COUNT_FIELD_NUMBER: _ClassVar[int]
    entries: _containers.RepeatedCompositeFieldContainer[_history_pb2.ConversationEntry]
    created_count: int
    existing_count: int
    def __init__(self, entries: _Optional[_Iterable[_Union[_history_pb2.ConversationEntry, _Mapping]]] = ..., created_count: _Optional[int] = ..., existing_count: _Optional[int] = ...) -> None: ...

class CompleteTurnRequest(_message.Message):
    __slots__ = ("thread_id", "turn_id", "entries", "previous_round_usage")
    THREAD_ID_FIELD_NUMBER: _ClassVar[int]
    TURN_ID_FIELD_NUMBER: _ClassVar[int]
    ENTRIES_FIELD_NUMBER: _ClassVar[int]
    PREVIOUS_ROUND_USAGE_FIELD_NUMBER: _ClassVar[int]
    thread_id: str
    turn_id: str
    entries: _containers.RepeatedCompositeFieldContainer[_history_pb2.ConversationEntry]
    previous_round_usage: _usage_pb2.ProviderUsage
    def __init__(self, thread_id: _Optional[str] = ..., turn_id: _Optional[str] = ..., entries: _Optional[_Iterable[_Union[_history_pb2.ConversationEntry, _Mapping]]] = ..., previous_round_usage: _Optional[_Union[_usage_pb2.ProviderUsage, _Mapping]] = ...) -> None: ...

class CompleteTurnResponse(_message.Message):
    __slots__ = ("completed_entry_count", "created_count", "existing_count")
    COMPLETED_ENTRY_COUNT_FIELD_NUMBER: _ClassVar[int]
    CREATED_COUNT_FIELD_NUMBER: _ClassVar[int]
    EXISTING_COUNT_FIELD_NUMBER: _ClassVar[int]
    completed_entry_count: int
    created_count: int
    existing_count: int
    def __init__(self, completed_entry_count: _Optional[int] = ..., created_count: _Optional[int] = ..., existing_count: _Optional[int] = ...) -> None: ...

class AbandonTurnRequest(_message.Message):
    __slots__ = ("thread_id", "turn_id", "allow_missing")
    THREAD_ID_FIELD_NUMBER: _ClassVar[int]
    TURN_ID_FIELD_NUMBER: _ClassVar[int]
    ALLOW_MISSING_FIELD_NUMBER: _ClassVar[int]
    thread_id: str
    turn_id: str
    allow_missing: bool
    def __init__(self, thread_id: _Optional[str] = ..., turn_id: _Optional[str] = ..., allow_missing: _Optional[bool] = ...) -> None: ...

class AbandonTurnResponse(_message.Message):
    __slots__ = ("abandoned", "dropped_entry_count")
    ABANDONED_FIELD_NUMBER: _ClassVar[int]
    DROPPED_ENTRY_COUNT_FIELD_NUMBER: _ClassVar[int]
    abandoned: bool
    dropped_entry_count: int
    def __init__(self, abandoned: _Optional[bool] = ..., dropped_entry_count: _Optional[int] = ...) -> None: ...

class DeleteThreadRequest(_message.Message):
    __slots__ = ("thread_id", "allow_missing", "etag")
    THREAD_ID_FIELD_NUMBER: _ClassVar[int]
    ALLOW_MISSING_FIELD_NUMBER: _ClassVar[int]
    ETAG_FIELD_NUMBER: _ClassVar[int]
    thread_id: str
    allow_missing: bool
    etag: str
    def __init__(self, thread_id: _Optional[str] = ..., allow_missing: _Optional[bool] = ..., etag: _Optional[str] = ...) -> None: ...

class DeleteThreadResponse(_message.Message):
    __slots__ = ("deleted",)
    DELETED_FIELD_NUMBER: _ClassVar[int]
    deleted: bool
    def __init__(self, deleted: _Optional[bool] = ...) -> None: ...

class ForkThreadRequest(_message.Message):
    __slots__ = ("source_thread_id", "source_turn_id", "thread_id", "config", "config_mask")
    SOURCE_THREAD_ID_FIELD_NUMBER: _ClassVar[int]
    SOURCE_TURN_ID_FIELD_NUMBER: _ClassVar[int]
    THREAD_ID_FIELD_NUMBER: _ClassVar[int]
    CONFIG_FIELD_NUMBER: _ClassVar[int]
    CONFIG_MASK_FIELD_NUMBER: _ClassVar[int]
    source_thread_id: str
    source_turn_id: str
    thread_id: str
    config: _history_pb2.ThreadConfig
    config_mask: _field_mask_pb2.FieldMask
    def __init__(self, source_thread_id: _Optional[str] = ..., source_turn_id: _Optional[str] = ..., thread_id: _Optional[str] = ..., config: _Optional[_Union[_history_pb2.ThreadConfig, _Mapping]] = ..., config_mask: _Optional[_Union[_field_mask_pb2.FieldMask, _Mapping]] = ...) -> None: ...

class ForkThreadResponse(_message.Message):
    __slots__ = ("thread", "turn_count", "summary_count")
    THREAD_FIELD_NUMBER: _ClassVar[int]
    TURN_COUNT_FIELD_NUMBER: _ClassVar[int]
    SUMMARY_COUNT_FIELD_NUMBER: _ClassVar[int]
    thread: _history_pb2.Thread
    turn_count: int
    summary_count: int
    def __init__(self, thread: _Optional[_Union[_history_pb2.Thread, _Mapping]] = ..., turn_count: _Optional[int] = ..., summary_count: _Optional[int] = ...) -> None: ...

class ExportThreadRequest(_message.Message):
    __slots__ = ("thread_id",)
    THREAD_ID_FIELD_NUMBER: _ClassVar[int]
    thread_id: str
    def __init__(self, thread_id: _Optional[str] = ...) -> None: ...

class ExportThreadResponse(_message.Message):
    __slots__ = ("chunk",)
    CHUNK_FIELD_NUMBER: _ClassVar[int]
    chunk: bytes
    def __init__(self, chunk: _Optional[bytes] = ...) -> None: ...

class ImportThreadRequest(_message.Message):
    __slots__ = ("thread_id", "chunk")
    THREAD_ID_FIELD_NUMBER: _ClassVar[int]
    CHUNK_FIELD_NUMBER: _ClassVar[int]
    thread_id: str
    chunk: bytes
    def __init__(self, thread_id: _Optional[str] = ..., chunk: _Optional[bytes] = ...) -> None: ...

class ImportThreadResponse(_message.Message):
    __slots__ = ("thread", "turn_count", "summary_count")
    THREAD_FIELD_NUMBER: _ClassVar[int]
    TURN_COUNT_FIELD_NUMBER: _ClassVar[int]
    SUMMARY_COUNT_FIELD_NUMBER: _ClassVar[int]
    thread: _history_pb2.Thread
    turn_count: int
    summary_count: int
    def __init__(self, thread: _Optional[_Union[_history_pb2.Thread, _Mapping]] = ..., turn_count: _Optional[int] = ..., summary_count: _Optional[int] = ...) -> None: ...

class LoadConversationHistoryRequest(_message.Message):
    __slots__ = ("thread_id", "exclude_turn_id", "dry_run")
    THREAD_ID_FIELD_NUMBER: _ClassVar[int]
    EXCLUDE_TURN_ID_FIELD_NUMBER: _ClassVar[int]
    DRY_RUN_FIELD_NUMBER: _ClassVar[int]
    thread_id: str
    exclude_turn_id: str
    dry_run: bool
    def __init__(self, thread_id: _Optional[str] = ..., exclude_turn_id: _Optional[str] = ..., dry_run: _Optional[bool] = ...) -> None: ...

class LoadConversationHistoryResponse(_message.Message):
    __slots__ = ("messages", "report")
    MESSAGES_FIELD_NUMBER: _ClassVar[int]
    REPORT_FIELD_NUMBER: _ClassVar[int]
    messages: _containers.RepeatedCompositeFieldContainer[_chat_pb2.ChatMessage]
    report: _history_pb2.HistoryDecisionReport
    def __init__(self, messages: _Optional[_Iterable[_Union[_chat_pb2.ChatMessage, _Mapping]]] = ..., report: _Optional[_Union[_history_pb2.HistoryDecisionReport, _Mapping]] = ...) -> None: ...

class GetThreadSummaryRequest(_message.Message):
    __slots__ = ("thread_id",)
    THREAD_ID_FIELD_NUMBER: _ClassVar[int]
    thread_id: str
    def __init__(self, thread_id: _Optional[str] = ...) -> None: ...

class GetThreadSummaryResponse(_message.Message):
    __slots__ = ("summary",)
    SUMMARY_FIELD_NUMBER: _ClassVar[int]
    summary: _history_pb2.ThreadSummary
    def __init__(self, summary: _Optional[_Union[_history_pb2.ThreadSummary, _Mapping]] = ...) -> None: ...

class CountTokensRequest(_message.Message):
    __slots__ = ("texts", "messages", "model")
    TEXTS_FIELD_NUMBER: _ClassVar[int]
    MESSAGES_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    texts: _containers.RepeatedScalarFieldContainer[str]
    messages: _containers.RepeatedCompositeFieldContainer[_chat_pb2.ChatMessage]
    model: str
    def __init__(self, texts: _Optional[_Iterable[str]] = ..., messages: _Optional[_Iterable[_Union[_chat_pb2.ChatMessage, _Mapping]]] = ..., model: _Optional[str] = ...) -> None: ...

class CountTokensResponse(_message.Message):
    __slots__ = ("token_counts", "total_tokens", "tokenizer", "exact", "fallback_reason")
    TOKEN_COUNTS_FIELD_NUMBER: _ClassVar[int]
    TOTAL_TOKENS_FIELD_NUMBER: _ClassVar[int]
    TOKENIZER_FIELD_NUMBER: _ClassVar[int]
    EXACT_FIELD_NUMBER: _ClassVar[int]
    FALLBACK_REASON_FIELD_NUMBER: _ClassVar[int]
    token_counts: _containers.RepeatedScalarFieldContainer[int]
    total_tokens: int
    tokenizer: str
    exact: bool
    fallback_reason: str
    def __init__(self, token_counts: _Optional[_Iterable[int]] = ..., total_tokens: _Optional[int] = ..., tokenizer: _Optional[str] = ..., exact: _Optional[bool] = ..., fallback_reason: _Optional[str] = ...) -> None: ...

class ListThreadsRequest(_message.Message):
    __slots__ = ("page_size", "page_token", "order_by", "filter")
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    ORDER_BY_FIELD_NUMBER: _ClassVar[int]
    FILTER_FIELD_NUMBER: _ClassVar[int]
    page_size: int
    page_token: str
    order_by: str
    filter: str
    def __init__(self, page_size: _Optional[int] = ..., page_token: _Optional[str] = ..., order_by: _Optional[str] = ..., filter: _Optional[str] = ...) -> None: ...

class ListThreadsResponse(_message.Message):
    __slots__ = ("threads", "next_page_token")
    THREADS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    threads: _containers.RepeatedCompositeFieldContainer[_history_pb2.Thread]
    next_page_token: str
    def __init__(self, threads: _Optional[_Iterable[_Union[_history_pb2.Thread, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class ListTurnsRequest(_message.Message):
    __slots__ = ("thread_id", "page_size", "page_token")
    THREAD_ID_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    thread_id: str
    page_size: int
    page_token: str
    def __init__(self, thread_id: _Optional[str] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class ListTurnsResponse(_message.Message):
    __slots__ = ("turns", "next_page_token")
    TURNS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    turns: _containers.RepeatedCompositeFieldContainer[_history_pb2.Turn]
    next_page_token: str
    def __init__(self, turns: _Optional[_Iterable[_Union[_history_pb2.Turn, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class ListEntriesRequest(_message.Message):
    __slots__ = ("thread_id", "turn_id", "page_size", "page_token")
    THREAD_ID_FIELD_NUMBER: _ClassVar[int]
    TURN_ID_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    thread_id: str
    turn_id: str
    page_size: int
    page_token: str
    def __init__(self, thread_id: _Optional[str] = ..., turn_id: _Optional[str] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class ListEntriesResponse(_message.Message):
    __slots__ = ("entries", "next_page_token")
    ENTRIES_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    entries: _containers.RepeatedCompositeFieldContainer[_history_pb2.ConversationEntry]
    next_page_token: str
    def __init__(self, entries: _Optional[_Iterable[_Union[_history_pb2.ConversationEntry, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...
