import datetime

from google.protobuf import timestamp_pb2 as _timestamp_pb2
from pioneer_grpc.v1 import history_pb2 as _history_pb2
from pioneer_grpc.v1 import provider_service_pb2 as _provider_service_pb2
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ProviderUsage(_message.Message):
    __slots__ = ("input_tokens", "cache_read_input_tokens", "cache_write_input_tokens", "output_tokens", "reasoning_output_tokens")
    INPUT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    CACHE_READ_INPUT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    CACHE_WRITE_INPUT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    REASONING_OUTPUT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    input_tokens: int
    cache_read_input_tokens: int
    cache_write_input_tokens: int
    output_tokens: int
    reasoning_output_tokens: int
    def __init__(self, input_tokens: _Optional[int] = ..., cache_read_input_tokens: _Optional[int] = ..., cache_write_input_tokens: _Optional[int] = ..., output_tokens: _Optional[int] = ..., reasoning_output_tokens: _Optional[int] = ...) -> None: ...

class RoundUsage(_message.Message):
    __slots__ = ("turn_id", "manifest_event_id", "turn_message_count", "provider", "model", "reported", "expected_input_tokens", "expected_cache_read_input_tokens", "expected_cache_write_input_tokens", "expected_input_cost_usd", "reported_input_cost_usd", "prefix_break", "report_time", "prepare_time")
    TURN_ID_FIELD_NUMBER: _ClassVar[int]
    MANIFEST_EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    TURN_MESSAGE_COUNT_FIELD_NUMBER: _ClassVar[int]
    PROVIDER_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    REPORTED_FIELD_NUMBER: _ClassVar[int]
    EXPECTED_INPUT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    EXPECTED_CACHE_READ_INPUT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    EXPECTED_CACHE_WRITE_INPUT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    EXPECTED_INPUT_COST_USD_FIELD_NUMBER: _ClassVar[int]
    REPORTED_INPUT_COST_USD_FIELD_NUMBER: _ClassVar[int]
    PREFIX_BREAK_FIELD_NUMBER: _ClassVar[int]
    REPORT_TIME_FIELD_NUMBER: _ClassVar[int]
    PREPARE_TIME_FIELD_NUMBER: _ClassVar[int]
    turn_id: str
    manifest_event_id: int
    turn_message_count: int
    provider: _provider_service_pb2.Provider
    model: str
    reported: ProviderUsage
    expected_input_tokens: int
    expected_cache_read_input_tokens: int
    expected_cache_write_input_tokens: int
    expected_input_cost_usd: float
    reported_input_cost_usd: float
    prefix_break: _history_pb2.PrefixBreak
    report_time: _timestamp_pb2.Timestamp
    prepare_time: _timestamp_pb2.Timestamp
    def __init__(self, turn_id: _Optional[str] = ..., manifest_event_id: _Optional[int] = ..., turn_message_count: _Optional[int] = ..., provider: _Optional[_Union[_provider_service_pb2.Provider, str]] = ..., model: _Optional[str] = ..., reported: _Optional[_Union[ProviderUsage, _Mapping]] = ..., expected_input_tokens: _Optional[int] = ..., expected_cache_read_input_tokens: _Optional[int] = ..., expected_cache_write_input_tokens: _Optional[int] = ..., expected_input_cost_usd: _Optional[float] = ..., reported_input_cost_usd: _Optional[float] = ..., prefix_break: _Optional[_Union[_history_pb2.PrefixBreak, _Mapping]] = ..., report_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., prepare_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...
