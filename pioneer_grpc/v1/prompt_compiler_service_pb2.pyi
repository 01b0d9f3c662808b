from google.api import field_behavior_pb2 as _field_behavior_pb2
from pioneer_grpc.v1 import prompt_pb2 as _prompt_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class CompilePromptRequest(_message.Message):
    __slots__ = ("input", "thread_id", "turn_id")
    INPUT_FIELD_NUMBER: _ClassVar[int]
    THREAD_ID_FIELD_NUMBER: _ClassVar[int]
    TURN_ID_FIELD_NUMBER: _ClassVar[int]
    input: _prompt_pb2.PromptCompileInput
    thread_id: str
    turn_id: str
    def __init__(self, input: _Optional[_Union[_prompt_pb2.PromptCompileInput, _Mapping]] = ..., thread_id: _Optional[str] = ..., turn_id: _Optional[str] = ...) -> None: ...

class CompilePromptResponse(_message.Message):
    __slots__ = ("payload", "manifest_event_id")
    PAYLOAD_FIELD_NUMBER: _ClassVar[int]
    MANIFEST_EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    payload: _prompt_pb2.CompiledPromptPayload
    manifest_event_id: int
    def __init__(self, payload: _Optional[_Union[_prompt_pb2.CompiledPromptPayload, _Mapping]] = ..., manifest_event_id: _Optional[int] = ...) -> None: ...

class EnsureBootstrapFilesRequest(_message.Message):
    __slots__ = ("workspace_root",)
    WORKSPACE_ROOT_FIELD_NUMBER: _ClassVar[int]
    workspace_root: str
    def __init__(self, workspace_root: _Optional[str] = ...) -> None: ...

class BootstrapFile(_message.Message):
    __slots__ = ("name", "path", "created")
    NAME_FIELD_NUMBER: _ClassVar[int]
    PATH_FIELD_NUMBER: _ClassVar[int]
    CREATED_FIELD_NUMBER: _ClassVar[int]
    name: str
    path: str
    created: bool
    def __init__(self, name: _Optional[str] = ..., path: _Optional[str] = ..., created: _Optional[bool] = ...) -> None: ...

class EnsureBootstrapFilesResponse(_message.Message):
    __slots__ = ("files",)
    FILES_FIELD_NUMBER: _ClassVar[int]
    files: _containers.RepeatedCompositeFieldContainer[BootstrapFile]
    def __init__(self, files: _Optional[_Iterable[_Union[BootstrapFile, _Mapping]]] = ...) -> None: ...
