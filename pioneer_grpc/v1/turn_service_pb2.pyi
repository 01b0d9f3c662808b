from google.api import field_behavior_pb2 as _field_behavior_pb2
from pioneer_grpc.v1 import chat_pb2 as _chat_pb2
from pioneer_grpc.v1 import history_pb2 as _history_pb2
from pioneer_grpc.v1 import prompt_pb2 as _prompt_pb2
from pioneer_grpc.v1 import provider_service_pb2 as _provider_service_pb2
from pioneer_grpc.v1 import usage_pb2 as _usage_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class PrepareTurnRequest(_message.Message):
    __slots__ = ("thread_id", "turn_id", "new_entries", "compile_input", "tools", "tool_choice", "parallel_tool_calls", "model", "temperature", "max_tokens", "reasoning", "provider", "render_options", "provider_body_only", "previous_round_usage")
    THREAD_ID_FIELD_NUMBER: _ClassVar[int]
    TURN_ID_FIELD_NUMBER: _ClassVar[int]
    NEW_ENTRIES_FIELD_NUMBER: _ClassVar[int]
    COMPILE_INPUT_FIELD_NUMBER: _ClassVar[int]
    TOOLS_FIELD_NUMBER: _ClassVar[int]
    TOOL_CHOICE_FIELD_NUMBER: _ClassVar[int]
    PARALLEL_TOOL_CALLS_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    TEMPERATURE_FIELD_NUMBER: _ClassVar[int]
    MAX_TOKENS_FIELD_NUMBER: _ClassVar[int]
    REASONING_FIELD_NUMBER: _ClassVar[int]
    PROVIDER_FIELD_NUMBER: _ClassVar[int]
    RENDER_OPTIONS_FIELD_NUMBER: _ClassVar[int]
    PROVIDER_BODY_ONLY_FIELD_NUMBER: _ClassVar[int]
    PREVIOUS_ROUND_USAGE_FIELD_NUMBER: _ClassVar[int]
    thread_id: str
    turn_id: str
    new_entries: _containers.RepeatedCompositeFieldContainer[_history_pb2.ConversationEntry]
    compile_input: _prompt_pb2.PromptCompileInput
    tools: _containers.RepeatedCompositeFieldContainer[_chat_pb2.ToolDefinition]
    tool_choice: _chat_pb2.ToolChoice
    parallel_tool_calls: bool
    model: str
    temperature: float
    max_tokens: int
    reasoning: _chat_pb2.Reasoning
    provider: _provider_service_pb2.Provider
    render_options: _provider_service_pb2.RenderOptions
    provider_body_only: bool
    previous_round_usage: _usage_pb2.ProviderUsage
    def __init__(self, thread_id: _Optional[str] = ..., turn_id: _Optional[str] = ..., new_entries: _Optional[_Iterable[_Union[_history_pb2.ConversationEntry, _Mapping]]] = ..., compile_input: _Optional[_Union[_prompt_pb2.PromptCompileInput, _Mapping]] = ..., tools: _Optional[_Iterable[_Union[_chat_pb2.ToolDefinition, _Mapping]]] = ..., tool_choice: _Optional[_Union[_chat_pb2.ToolChoice, _Mapping]] = ..., parallel_tool_calls: _Optional[bool] = ..., model: _Optional[str] = ..., temperature: _Optional[float] = ..., max_tokens: _Optional[int] = ..., reasoning: _Optional[_Union[_chat_pb2.Reasoning, _Mapping]] = ..., provider: _Optional[_Union[_provider_service_pb2.Provider, str]] = ..., render_options: _Optional[_Union[_provider_service_pb2.RenderOptions, _Mapping]] = ..., provider_body_only: _Optional[bool] = ..., previous_round_usage: _Optional[_Union[_usage_pb2.ProviderUsage, _Mapping]] = ...) -> None: ...

class PrepareTurnResponse(_message.Message):
    __slots__ = ("chat_request", "history_report", "manifest", "manifest_event_id", "provider_body_json", "provider_path", "provider_notices")
    CHAT_REQUEST_FIELD_NUMBER: _ClassVar[int]
    HISTORY_REPORT_FIELD_NUMBER: _ClassVar[int]
    MANIFEST_FIELD_NUMBER: _ClassVar[int]
    MANIFEST_EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    PROVIDER_BODY_JSON_FIELD_NUMBER: _ClassVar[int]
    PROVIDER_PATH_FIELD_NUMBER: _ClassVar[int]
    PROVIDER_NOTICES_FIELD_NUMBER: _ClassVar[int]
    chat_request: _chat_pb2.ChatRequest
    history_report: _history_pb2.HistoryDecisionReport
    manifest: _prompt_pb2.PromptManifest
    manifest_event_id: int
    provider_body_json: str
    provider_path: str
    provider_notices: _containers.RepeatedCompositeFieldContainer[_provider_service_pb2.RenderNotice]
    def __init__(self, chat_request: _Optional[_Union[_chat_pb2.ChatRequest, _Mapping]] = ..., history_report: _Optional[_Union[_history_pb2.HistoryDecisionReport, _Mapping]] = ..., manifest: _Optional[_Union[_prompt_pb2.PromptManifest, _Mapping]] = ..., manifest_event_id: _Optional[int] = ..., provider_body_json: _Optional[str] = ..., provider_path: _Optional[str] = ..., provider_notices: _Optional[_Iterable[_Union[_provider_service_pb2.RenderNotice, _Mapping]]] = ...) -> None: ...
