import datetime

from google.api import field_behavior_pb2 as _field_behavior_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from pioneer_grpc.v1 import prompt_pb2 as _prompt_pb2
from pioneer_grpc.v1 import chat_pb2 as _chat_pb2
from pioneer_grpc.v1 import history_pb2 as _history_pb2
from pioneer_grpc.v1 import usage_pb2 as _usage_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class SectionChangeKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SECTION_CHANGE_KIND_UNSPECIFIED: _ClassVar[SectionChangeKind]
    SECTION_CHANGE_KIND_ADDED: _ClassVar[SectionChangeKind]
    SECTION_CHANGE_KIND_REMOVED: _ClassVar[SectionChangeKind]
    SECTION_CHANGE_KIND_CHANGED: _ClassVar[SectionChangeKind]
    SECTION_CHANGE_KIND_MOVED: _ClassVar[SectionChangeKind]
SECTION_CHANGE_KIND_UNSPECIFIED: SectionChangeKind
SECTION_CHANGE_KIND_ADDED: SectionChangeKind
SECTION_CHANGE_KIND_REMOVED: SectionChangeKind
SECTION_CHANGE_KIND_CHANGED: SectionChangeKind
SECTION_CHANGE_KIND_MOVED: SectionChangeKind

class GetTurnManifestRequest(_message.Message):
    __slots__ = ("thread_id", "turn_id")
    THREAD_ID_FIELD_NUMBER: _ClassVar[int]
    TURN_ID_FIELD_NUMBER: _ClassVar[int]
    thread_id: str
    turn_id: str
    def __init__(self, thread_id: _Optional[str] = ..., turn_id: _Optional[str] = ...) -> None: ...

class GetTurnManifestResponse(_message.Message):
    __slots__ = ("manifest", "status", "event_id")
    MANIFEST_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    manifest: _prompt_pb2.PromptManifest
    status: _history_pb2.TurnStatus
    event_id: int
    def __init__(self, manifest: _Optional[_Union[_prompt_pb2.PromptManifest, _Mapping]] = ..., status: _Optional[_Union[_history_pb2.TurnStatus, str]] = ..., event_id: _Optional[int] = ...) -> None: ...

class WatchManifestsRequest(_message.Message):
    __slots__ = ("thread_id", "after_event_id", "live_only")
    THREAD_ID_FIELD_NUMBER: _ClassVar[int]
    AFTER_EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    LIVE_ONLY_FIELD_NUMBER: _ClassVar[int]
    thread_id: str
    after_event_id: int
    live_only: bool
    def __init__(self, thread_id: _Optional[str] = ..., after_event_id: _Optional[int] = ..., live_only: _Optional[bool] = ...) -> None: ...

class ManifestEvent(_message.Message):
    __slots__ = ("event_id", "thread_id", "turn_id", "manifest", "create_time", "thread_deleted", "tenant")
    EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    THREAD_ID_FIELD_NUMBER: _ClassVar[int]
    TURN_ID_FIELD_NUMBER: _ClassVar[int]
    MANIFEST_FIELD_NUMBER: _ClassVar[int]
    CREATE_TIME_FIELD_NUMBER: _ClassVar[int]
    THREAD_DELETED_FIELD_NUMBER: _ClassVar[int]
    TENANT_FIELD_NUMBER: _ClassVar[int]
    event_id: int
    thread_id: str
    turn_id: str
    manifest: _prompt_pb2.PromptManifest
    create_time: _timestamp_pb2.Timestamp
    thread_deleted: bool
    tenant: str
    def __init__(self, event_id: _Optional[int] = ..., thread_id: _Optional[str] = ..., turn_id: _Optional[str] = ..., manifest: _Optional[_Union[_prompt_pb2.PromptManifest, _Mapping]] = ..., create_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., thread_deleted: _Optional[bool] = ..., tenant: _Optional[str] = ...) -> None: ...

class Heartbeat(_message.Message):
    __slots__ = ("time", "last_event_id")
    TIME_FIELD_NUMBER: _ClassVar[int]
    LAST_EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    time: _timestamp_pb2.Timestamp
    last_event_id: int
    def __init__(self, time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., last_event_id: _Optional[int] = ...) -> None: ...

class WatchManifestsResponse(_message.Message):
    __slots__ = ("event", "heartbeat")
    EVENT_FIELD_NUMBER: _ClassVar[int]
    HEARTBEAT_FIELD_NUMBER: _ClassVar[int]
    event: ManifestEvent
    heartbeat: Heartbeat
    def __init__(self, event: _Optional[_Union[ManifestEvent, _Mapping]] = ..., heartbeat: _Optional[_Union[Heartbeat, _Mapping]] = ...) -> None: ...

class ManifestRef(_message.Message):
    __slots__ = ("turn", "event_id", "manifest")
    TURN_FIELD_NUMBER: _ClassVar[int]
    EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    MANIFEST_FIELD_NUMBER: _ClassVar[int]
    turn: TurnRef
    event_id: int
    manifest: _prompt_pb2.PromptManifest
    def __init__(self, turn: _Optional[_Union[TurnRef, _Mapping]] = ..., event_id: _Optional[int] = ..., manifest: _Optional[_Union[_prompt_pb2.PromptManifest, _Mapping]] = ...) -> None: ...

class TurnRef(_message.Message):
    __slots__ = ("thread_id", "turn_id")
    THREAD_ID_FIELD_NUMBER: _ClassVar[int]
    TURN_ID_FIELD_NUMBER: _ClassVar[int]
    thread_id: str
    turn_id: str
    def __init__(self, thread_id: _Optional[str] = ..., turn_id: _Optional[str] = ...) -> None: ...

class DiffManifestsRequest(_message.Message):
    __slots__ = ("base", "target")
    BASE_FIELD_NUMBER: _ClassVar[int]
    TARGET_FIELD_NUMBER: _ClassVar[int]
    base: ManifestRef
    target: ManifestRef
    def __init__(self, base: _Optional[_Union[ManifestRef, _Mapping]] = ..., target: _Optional[_Union[ManifestRef, _Mapping]] = ...) -> None: ...

class SectionChange(_message.Message):
    __slots__ = ("section_id", "kind", "stability", "base_fingerprint", "target_fingerprint")
    SECTION_ID_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    STABILITY_FIELD_NUMBER: _ClassVar[int]
    BASE_FINGERPRINT_FIELD_NUMBER: _ClassVar[int]
    TARGET_FINGERPRINT_FIELD_NUMBER: _ClassVar[int]
    section_id: str
    kind: SectionChangeKind
    stability: _prompt_pb2.SectionStability
    base_fingerprint: str
    target_fingerprint: str
    def __init__(self, section_id: _Optional[str] = ..., kind: _Optional[_Union[SectionChangeKind, str]] = ..., stability: _Optional[_Union[_prompt_pb2.SectionStability, str]] = ..., base_fingerprint: _Optional[str] = ..., target_fingerprint: _Optional[str] = ...) -> None: ...

class DiffManifestsResponse(_message.Message):
    __slots__ = ("changes", "stable_changed", "dynamic_changed", "full_changed", "cache_break_section_id", "new_diagnostics")
    CHANGES_FIELD_NUMBER: _ClassVar[int]
    STABLE_CHANGED_FIELD_NUMBER: _ClassVar[int]
    DYNAMIC_CHANGED_FIELD_NUMBER: _ClassVar[int]
    FULL_CHANGED_FIELD_NUMBER: _ClassVar[int]
    CACHE_BREAK_SECTION_ID_FIELD_NUMBER: _ClassVar[int]
    NEW_DIAGNOSTICS_FIELD_NUMBER: _ClassVar[int]
    changes: _containers.RepeatedCompositeFieldContainer[SectionChange]
    stable_changed: bool
    dynamic_changed: bool
    full_changed: bool
    cache_break_section_id: str
    new_diagnostics: _containers.RepeatedCompositeFieldContainer[_prompt_pb2.PromptDiagnostic]
    def __init__(self, changes: _Optional[_Iterable[_Union[SectionChange, _Mapping]]] = ..., stable_changed: _Optional[bool] = ..., dynamic_changed: _Optional[bool] = ..., full_changed: _Optional[bool] = ..., cache_break_section_id: _Optional[str] = ..., new_diagnostics: _Optional[_Iterable[_Union[_prompt_pb2.PromptDiagnostic, _Mapping]]] = ...) -> None: ...

class ListRenderedRoundsRequest(_message.Message):
    __slots__ = ("thread_id", "turn_id")
    THREAD_ID_FIELD_NUMBER: _ClassVar[int]
    TURN_ID_FIELD_NUMBER: _ClassVar[int]
    thread_id: str
    turn_id: str
    def __init__(self, thread_id: _Optional[str] = ..., turn_id: _Optional[str] = ...) -> None: ...

class RenderedRound(_message.Message):
    __slots__ = ("round", "manifest_event_id", "create_time", "compiled_prompt", "history_report", "messages", "provider_path", "provider_body_json", "kept_bytes")
    ROUND_FIELD_NUMBER: _ClassVar[int]
    MANIFEST_EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    CREATE_TIME_FIELD_NUMBER: _ClassVar[int]
    COMPILED_PROMPT_FIELD_NUMBER: _ClassVar[int]
    HISTORY_REPORT_FIELD_NUMBER: _ClassVar[int]
    MESSAGES_FIELD_NUMBER: _ClassVar[int]
    PROVIDER_PATH_FIELD_NUMBER: _ClassVar[int]
    PROVIDER_BODY_JSON_FIELD_NUMBER: _ClassVar[int]
    KEPT_BYTES_FIELD_NUMBER: _ClassVar[int]
    round: int
    manifest_event_id: int
    create_time: _timestamp_pb2.Timestamp
    compiled_prompt: _prompt_pb2.CompiledPromptPayload
    history_report: _history_pb2.HistoryDecisionReport
    messages: _containers.RepeatedCompositeFieldContainer[_chat_pb2.ChatMessage]
    provider_path: str
    provider_body_json: str
    kept_bytes: int
    def __init__(self, round: _Optional[int] = ..., manifest_event_id: _Optional[int] = ..., create_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., compiled_prompt: _Optional[_Union[_prompt_pb2.CompiledPromptPayload, _Mapping]] = ..., history_report: _Optional[_Union[_history_pb2.HistoryDecisionReport, _Mapping]] = ..., messages: _Optional[_Iterable[_Union[_chat_pb2.ChatMessage, _Mapping]]] = ..., provider_path: _Optional[str] = ..., provider_body_json: _Optional[str] = ..., kept_bytes: _Optional[int] = ...) -> None: ...

class ListRenderedRoundsResponse(_message.Message):
    __slots__ = ("kept", "rounds", "max_rounds_per_thread", "max_total_bytes", "max_age_seconds")
    KEPT_FIELD_NUMBER: _ClassVar[int]
    ROUNDS_FIELD_NUMBER: _ClassVar[int]
    MAX_ROUNDS_PER_THREAD_FIELD_NUMBER: _ClassVar[int]
    MAX_TOTAL_BYTES_FIELD_NUMBER: _ClassVar[int]
    MAX_AGE_SECONDS_FIELD_NUMBER: _ClassVar[int]
    kept: bool
    rounds: _containers.RepeatedCompositeFieldContainer[RenderedRound]
    max_rounds_per_thread: int
    max_total_bytes: int
    max_age_seconds: int
    def __init__(self, kept: _Optional[bool] = ..., rounds: _Optional[_Iterable[_Union[RenderedRound, _Mapping]]] = ..., max_rounds_per_thread: _Optional[int] = ..., max_total_bytes: _Optional[int] = ..., max_age_seconds: _Optional[int] = ...) -> None: ...

class ListRoundUsageRequest(_message.Message):
    __slots__ = ("thread_id", "page_size")
    THREAD_ID_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    thread_id: str
    page_size: int
    def __init__(self, thread_id: _Optional[str] = ..., page_size: _Optional[int] = ...) -> None: ...

class ListRoundUsageResponse(_message.Message):
    __slots__ = ("rounds",)
    ROUNDS_FIELD_NUMBER: _ClassVar[int]
    rounds: _containers.RepeatedCompositeFieldContainer[_usage_pb2.RoundUsage]
    def __init__(self, rounds: _Optional[_Iterable[_Union[_usage_pb2.RoundUsage, _Mapping]]] = ...) -> None: ...
