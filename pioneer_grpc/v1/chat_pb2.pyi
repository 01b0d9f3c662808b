from google.api import field_behavior_pb2 as _field_behavior_pb2
from google.protobuf import struct_pb2 as _struct_pb2
from pioneer_grpc.v1 import common_pb2 as _common_pb2
from pioneer_grpc.v1 import prompt_pb2 as _prompt_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ChatRole(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    CHAT_ROLE_UNSPECIFIED: _ClassVar[ChatRole]
    CHAT_ROLE_SYSTEM: _ClassVar[ChatRole]
    CHAT_ROLE_USER: _ClassVar[ChatRole]
    CHAT_ROLE_ASSISTANT: _ClassVar[ChatRole]
    CHAT_ROLE_TOOL: _ClassVar[ChatRole]

class ToolChoiceMode(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    TOOL_CHOICE_MODE_UNSPECIFIED: _ClassVar[ToolChoiceMode]
    TOOL_CHOICE_MODE_AUTO: _ClassVar[ToolChoiceMode]
    TOOL_CHOICE_MODE_NONE: _ClassVar[ToolChoiceMode]
    TOOL_CHOICE_MODE_REQUIRED: _ClassVar[ToolChoiceMode]
    TOOL_CHOICE_MODE_TOOL: _ClassVar[ToolChoiceMode]

class ReasoningEffort(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    REASONING_EFFORT_UNSPECIFIED: _ClassVar[ReasoningEffort]
    REASONING_EFFORT_MINIMAL: _ClassVar[ReasoningEffort]
    REASONING_EFFORT_LOW: _ClassVar[ReasoningEffort]
    REASONING_EFFORT_MEDIUM: _ClassVar[ReasoningEffort]
    REASONING_EFFORT_HIGH: _ClassVar[ReasoningEffort]

class DynamicContextPlacement(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    DYNAMIC_CONTEXT_PLACEMENT_UNSPECIFIED: _ClassVar[DynamicContextPlacement]
    DYNAMIC_CONTEXT_PLACEMENT_AFTER_CONVERSATION: _ClassVar[DynamicContextPlacement]
    DYNAMIC_CONTEXT_PLACEMENT_BEFORE_CONVERSATION: _ClassVar[DynamicContextPlacement]
CHAT_ROLE_UNSPECIFIED: ChatRole
CHAT_ROLE_SYSTEM: ChatRole
CHAT_ROLE_USER: ChatRole
CHAT_ROLE_ASSISTANT: ChatRole
CHAT_ROLE_TOOL: ChatRole
TOOL_CHOICE_MODE_UNSPECIFIED: ToolChoiceMode
TOOL_CHOICE_MODE_AUTO: ToolChoiceMode
TOOL_CHOICE_MODE_NONE: ToolChoiceMode
TOOL_CHOICE_MODE_REQUIRED: ToolChoiceMode
TOOL_CHOICE_MODE_TOOL: ToolChoiceMode
REASONING_EFFORT_UNSPECIFIED: ReasoningEffort
REASONING_EFFORT_MINIMAL: ReasoningEffort
REASONING_EFFORT_LOW: ReasoningEffort
REASONING_EFFORT_MEDIUM: ReasoningEffort
REASONING_EFFORT_HIGH: ReasoningEffort
DYNAMIC_CONTEXT_PLACEMENT_UNSPECIFIED: DynamicContextPlacement
DYNAMIC_CONTEXT_PLACEMENT_AFTER_CONVERSATION: DynamicContextPlacement
DYNAMIC_CONTEXT_PLACEMENT_BEFORE_CONVERSATION: DynamicContextPlacement

class MediaPart(_message.Message):
    __slots__ = ("mime_type", "data", "uri", "filename")
    MIME_TYPE_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    URI_FIELD_NUMBER: _ClassVar[int]
    FILENAME_FIELD_NUMBER: _ClassVar[int]
    mime_type: str
    data: bytes
    uri: str
    filename: str
    def __init__(self, mime_type: _Optional[str] = ..., data: _Optional[bytes] = ..., uri: _Optional[str] = ..., filename: _Optional[str] = ...) -> None: ...

class ContentPart(_message.Message):
    __slots__ = ("text", "image", "file", "audio", "video")
    TEXT_FIELD_NUMBER: _ClassVar[int]
    IMAGE_FIELD_NUMBER: _ClassVar[int]
    FILE_FIELD_NUMBER: _ClassVar[int]
    AUDIO_FIELD_NUMBER: _ClassVar[int]
    VIDEO_FIELD_NUMBER: _ClassVar[int]
    text: str
    image: MediaPart
    file: MediaPart
    audio: MediaPart
    video: MediaPart
    def __init__(self, text: _Optional[str] = ..., image: _Optional[_Union[MediaPart, _Mapping]] = ..., file: _Optional[_Union[MediaPart, _Mapping]] = ..., audio: _Optional[_Union[MediaPart, _Mapping]] = ..., video: _Optional[_Union[MediaPart, _Mapping]] = ...) -> None: ...

class ChatMessage(_message.Message):
    __slots__ = ("role", "content", "reasoning_content", "content_parts", "tool_call_id", "name", "tool_calls", "artifact_refs", "is_error")
    ROLE_FIELD_NUMBER: _ClassVar[int]
    CONTENT_FIELD_NUMBER: _ClassVar[int]
    REASONING_CONTENT_FIELD_NUMBER: _ClassVar[int]
    CONTENT_PARTS_FIELD_NUMBER: _ClassVar[int]
    TOOL_CALL_ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    TOOL_CALLS_FIELD_NUMBER: _ClassVar[int]
    ARTIFACT_REFS_FIELD_NUMBER: _ClassVar[int]
    IS_ERROR_FIELD_NUMBER: _ClassVar[int]
    role: ChatRole
    content: str
    reasoning_content: str
    content_parts: _containers.RepeatedCompositeFieldContainer[ContentPart]
    tool_call_id: str
    name: str
    tool_calls: _containers.RepeatedCompositeFieldContainer[_common_pb2.ToolCall]
    artifact_refs: _containers.RepeatedCompositeFieldContainer[_common_pb2.ArtifactRef]
    is_error: bool
    def __init__(self, role: _Optional[_Union[ChatRole, str]] = ..., content: _Optional[str] = ..., reasoning_content: _Optional[str] = ..., content_parts: _Optional[_Iterable[_Union[ContentPart, _Mapping]]] = ..., tool_call_id: _Optional[str] = ..., name: _Optional[str] = ..., tool_calls: _Optional[_Iterable[_Union[_common_pb2.ToolCall, _Mapping]]] = ..., artifact_refs: _Optional[_Iterable[_Union[_common_pb2.ArtifactRef, _Mapping]]] = ..., is_error: _Optional[bool] = ...) -> None: ...

class ToolDefinition(_message.Message):
    __slots__ = ("name", "description", "parameters")
    NAME_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    PARAMETERS_FIELD_NUMBER: _ClassVar[int]
    name: str
    description: str
    parameters: _struct_pb2.Struct
    def __init__(self, name: _Optional[str] = ..., description: _Optional[str] = ..., parameters: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ...) -> None: ...

class ToolChoice(_message.Message):
    __slots__ = ("mode", "tool_name")
    MODE_FIELD_NUMBER: _ClassVar[int]
    TOOL_NAME_FIELD_NUMBER: _ClassVar[int]
    mode: ToolChoiceMode
    tool_name: str
    def __init__(self, mode: _Optional[_Union[ToolChoiceMode, str]] = ..., tool_name: _Optional[str] = ...) -> None: ...

class Reasoning(_message.Message):
    __slots__ = ("disabled", "effort", "budget_tokens")
    DISABLED_FIELD_NUMBER: _ClassVar[int]
    EFFORT_FIELD_NUMBER: _ClassVar[int]
    BUDGET_TOKENS_FIELD_NUMBER: _ClassVar[int]
    disabled: bool
    effort: ReasoningEffort
    budget_tokens: int
    def __init__(self, disabled: _Optional[bool] = ..., effort: _Optional[_Union[ReasoningEffort, str]] = ..., budget_tokens: _Optional[int] = ...) -> None: ...

class ChatRequest(_message.Message):
    __slots__ = ("model", "messages", "temperature", "max_tokens", "tools", "tool_choice", "parallel_tool_calls", "reasoning", "compiled_prompt")
    MODEL_FIELD_NUMBER: _ClassVar[int]
    MESSAGES_FIELD_NUMBER: _ClassVar[int]
    TEMPERATURE_FIELD_NUMBER: _ClassVar[int]
    MAX_TOKENS_FIELD_NUMBER: _ClassVar[int]
    TOOLS_FIELD_NUMBER: _ClassVar[int]
    TOOL_CHOICE_FIELD_NUMBER: _ClassVar[int]
    PARALLEL_TOOL_CALLS_FIELD_NUMBER: _ClassVar[int]
    REASONING_FIELD_NUMBER: _ClassVar[int]
    COMPILED_PROMPT_FIELD_NUMBER: _ClassVar[int]
    model: str
    messages: _containers.RepeatedCompositeFieldContainer[ChatMessage]
    temperature: float
    max_tokens: int
    tools: _containers.RepeatedCompositeFieldContainer[ToolDefinition]
    tool_choice: ToolChoice
    parallel_tool_calls: bool
    reasoning: Reasoning
    compiled_prompt: _prompt_pb2.CompiledPromptPayload
    def __init__(self, model: _Optional[str] = ..., messages: _Optional[_Iterable[_Union[ChatMessage, _Mapping]]] = ..., temperature: _Optional[float] = ..., max_tokens: _Optional[int] = ..., tools: _Optional[_Iterable[_Union[ToolDefinition, _Mapping]]] = ..., tool_choice: _Optional[_Union[ToolChoice, _Mapping]] = ..., parallel_tool_calls: _Optional[bool] = ..., reasoning: _Optional[_Union[Reasoning, _Mapping]] = ..., compiled_prompt: _Optional[_Union[_prompt_pb2.CompiledPromptPayload, _Mapping]] = ...) -> None: ...
