from google.api import field_behavior_pb2 as _field_behavior_pb2
from pioneer_grpc.v1 import chat_pb2 as _chat_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Provider(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    PROVIDER_UNSPECIFIED: _ClassVar[Provider]
    PROVIDER_OPENAI_CHAT_COMPLETIONS: _ClassVar[Provider]
    PROVIDER_OPENAI_RESPONSES: _ClassVar[Provider]
    PROVIDER_ANTHROPIC_MESSAGES: _ClassVar[Provider]
    PROVIDER_GEMINI_GENERATE_CONTENT: _ClassVar[Provider]
    PROVIDER_AMAZON_BEDROCK_CONVERSE: _ClassVar[Provider]
PROVIDER_UNSPECIFIED: Provider
PROVIDER_OPENAI_CHAT_COMPLETIONS: Provider
PROVIDER_OPENAI_RESPONSES: Provider
PROVIDER_ANTHROPIC_MESSAGES: Provider
PROVIDER_GEMINI_GENERATE_CONTENT: Provider
PROVIDER_AMAZON_BEDROCK_CONVERSE: Provider

class RenderOptions(_message.Message):
    __slots__ = ("anthropic_min_cache_chars", "cache_key_prefix", "dynamic_context_placement", "prompt_cache_thread_id")
    ANTHROPIC_MIN_CACHE_CHARS_FIELD_NUMBER: _ClassVar[int]
    CACHE_KEY_PREFIX_FIELD_NUMBER: _ClassVar[int]
    DYNAMIC_CONTEXT_PLACEMENT_FIELD_NUMBER: _ClassVar[int]
    PROMPT_CACHE_THREAD_ID_FIELD_NUMBER: _ClassVar[int]
    anthropic_min_cache_chars: int
    cache_key_prefix: str
    dynamic_context_placement: _chat_pb2.DynamicContextPlacement
    prompt_cache_thread_id: str
    def __init__(self, anthropic_min_cache_chars: _Optional[int] = ..., cache_key_prefix: _Optional[str] = ..., dynamic_context_placement: _Optional[_Union[_chat_pb2.DynamicContextPlacement, str]] = ..., prompt_cache_thread_id: _Optional[str] = ...) -> None: ...

class RenderChatRequestRequest(_message.Message):
    __slots__ = ("provider", "chat_request", "options")
    PROVIDER_FIELD_NUMBER: _ClassVar[int]
    CHAT_REQUEST_FIELD_NUMBER: _ClassVar[int]
    OPTIONS_FIELD_NUMBER: _ClassVar[int]
    provider: Provider
    chat_request: _chat_pb2.ChatRequest
    options: RenderOptions
    def __init__(self, provider: _Optional[_Union[Provider, str]] = ..., chat_request: _Optional[_Union[_chat_pb2.ChatRequest, _Mapping]] = ..., options: _Optional[_Union[RenderOptions, _Mapping]] = ...) -> None: ...

class RenderChatRequestResponse(_message.Message):
    __slots__ = ("body_json", "path", "cache_breakpoints", "notices")
    BODY_JSON_FIELD_NUMBER: _ClassVar[int]
    PATH_FIELD_NUMBER: _ClassVar[int]
    CACHE_BREAKPOINTS_FIELD_NUMBER: _ClassVar[int]
    NOTICES_FIELD_NUMBER: _ClassVar[int]
    body_json: str
    path: str
    cache_breakpoints: int
    notices: _containers.RepeatedCompositeFieldContainer[RenderNotice]
    def __init__(self, body_json: _Optional[str] = ..., path: _Optional[str] = ..., cache_breakpoints: _Optional[int] = ..., notices: _Optional[_Iterable[_Union[RenderNotice, _Mapping]]] = ...) -> None: ...

class RenderNotice(_message.Message):
    __slots__ = ("code", "message", "field")
    CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    FIELD_FIELD_NUMBER: _ClassVar[int]
    code: str
    message: str
    field: str
    def __init__(self, code: _Optional[str] = ..., message: _Optional[str] = ..., field: _Optional[str] = ...) -> None: ...
