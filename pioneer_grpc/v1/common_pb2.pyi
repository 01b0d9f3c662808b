from google.api import field_behavior_pb2 as _field_behavior_pb2
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ImageDetail(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    IMAGE_DETAIL_UNSPECIFIED: _ClassVar[ImageDetail]
    IMAGE_DETAIL_LOW: _ClassVar[ImageDetail]
    IMAGE_DETAIL_HIGH: _ClassVar[ImageDetail]
IMAGE_DETAIL_UNSPECIFIED: ImageDetail
IMAGE_DETAIL_LOW: ImageDetail
IMAGE_DETAIL_HIGH: ImageDetail

class ArtifactRef(_message.Message):
    __slots__ = ("artifact_id", "version_id", "display_name", "kind", "mime_type", "size_bytes", "sha256", "role", "width_px", "height_px", "page_count", "detail")
    ARTIFACT_ID_FIELD_NUMBER: _ClassVar[int]
    VERSION_ID_FIELD_NUMBER: _ClassVar[int]
    DISPLAY_NAME_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    MIME_TYPE_FIELD_NUMBER: _ClassVar[int]
    SIZE_BYTES_FIELD_NUMBER: _ClassVar[int]
    SHA256_FIELD_NUMBER: _ClassVar[int]
    ROLE_FIELD_NUMBER: _ClassVar[int]
    WIDTH_PX_FIELD_NUMBER: _ClassVar[int]
    HEIGHT_PX_FIELD_NUMBER: _ClassVar[int]
    PAGE_COUNT_FIELD_NUMBER: _ClassVar[int]
    DETAIL_FIELD_NUMBER: _ClassVar[int]
    artifact_id: str
    version_id: str
    display_name: str
    kind: str
    mime_type: str
    size_bytes: int
    sha256: str
    role: str
    width_px: int
    height_px: int
    page_count: int
    detail: ImageDetail
    def __init__(self, artifact_id: _Optional[str] = ..., version_id: _Optional[str] = ..., display_name: _Optional[str] = ..., kind: _Optional[str] = ..., mime_type: _Optional[str] = ..., size_bytes: _Optional[int] = ..., sha256: _Optional[str] = ..., role: _Optional[str] = ..., width_px: _Optional[int] = ..., height_px: _Optional[int] = ..., page_count: _Optional[int] = ..., detail: _Optional[_Union[ImageDetail, str]] = ...) -> None: ...

class ToolCall(_message.Message):
    __slots__ = ("id", "name", "arguments")
    ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    ARGUMENTS_FIELD_NUMBER: _ClassVar[int]
    id: str
    name: str
    arguments: str
    def __init__(self, id: _Optional[str] = ..., name: _Optional[str] = ..., arguments: _Optional[str] = ...) -> None: ...
