"""OTLP/gRPC span export that writes the protobuf wire format directly.

The SDK's encoder builds a protobuf object per span, attribute and value in
Python; on a server doing a few milliseconds of work per request that costs as
much as creating the spans. This one writes each span's bytes straight from the
ReadableSpan (ids, name, kind, times, attributes, status, flags) and leaves
anything unusual, a span with events or links or an attribute it does not know,
to the SDK's encoder, so the request a collector receives is the same message.
The channel, headers, TLS, compression and retries stay the SDK exporter's.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Sequence
from typing import Any

from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import StatusCode

from pioneer_grpc.wire import varint

_FIXED64 = struct.Struct("<Q")
_DOUBLE = struct.Struct("<d")
# Span.flags (fixed32, field 16): the parent's remoteness is known; and, when it is, that it is remote.
_FLAGS_LOCAL = b"\x85\x01" + struct.pack("<I", 0x100)
_FLAGS_REMOTE = b"\x85\x01" + struct.pack("<I", 0x300)
_CACHED = frozenset({str, bool, int, float})
_CACHE_SIZE = 4096
_STATUS_CODES = {StatusCode.UNSET: 0, StatusCode.OK: 1, StatusCode.ERROR: 2}


class _Unusual(Exception):
    """A span this encoder leaves to the SDK's."""


def _field(tag: bytes, payload: bytes) -> bytes:
    """A length-delimited field: its tag, the payload's length, the payload."""
    size = len(payload)
    return tag + varint(size) + payload


def _any_value(value: Any) -> bytes:
    """AnyValue: string 1, bool 2, int 3, double 4, array 5, bytes 7."""
    kind = type(value)
    if kind is str:
        return _field(b"\x0a", value.encode())
    if kind is bool:
        return b"\x10\x01" if value else b"\x10\x00"
    if kind is int and -(1 << 63) <= value < 1 << 63:
        return b"\x18" + varint(value)
    if kind is float:
        return b"\x21" + _DOUBLE.pack(value)
    if kind is tuple or kind is list:
        return _field(b"\x2a", b"".join(_field(b"\x0a", _any_value(item)) for item in value))
    if kind is bytes:
        return _field(b"\x3a", value)
    raise _Unusual


def _sdk_encoded(span: ReadableSpan) -> ResourceSpans:
    """The SDK's encoding of one span, with its resource and scope."""
    encoded: ResourceSpans = encode_spans([span]).resource_spans[0]
    return encoded


def _without_spans(span: ReadableSpan) -> tuple[bytes, bytes]:
    """ResourceSpans and ScopeSpans of the span's resource and scope, as the SDK encodes them, minus spans."""
    resource_spans = _sdk_encoded(span)
    scope_spans = resource_spans.scope_spans[0]
    del scope_spans.spans[:]
    scope = scope_spans.SerializeToString()
    del resource_spans.scope_spans[:]
    return bytes(resource_spans.SerializeToString()), bytes(scope)


class SpanEncoder:
    """ExportTraceServiceRequest bytes for a batch of ended spans."""

    def __init__(self) -> None:
        # Most attributes repeat (service, method, thread, model, decision): each is encoded once.
        self._attributes: dict[tuple[str, Any, type], bytes] = {}
        self._names: dict[str, bytes] = {}
        self._groups: dict[tuple[int, int], tuple[Resource, InstrumentationScope | None, bytes, bytes]] = {}

    def _attribute(self, name: str, value: Any) -> bytes:
        """One KeyValue as a Span.attributes field."""
        kind = type(value)
        token = (name, value, kind) if kind in _CACHED else None
        encoded = self._attributes.get(token) if token else None
        if encoded is None:
            encoded = _field(b"\x4a", _field(b"\x0a", name.encode()) + _field(b"\x12", _any_value(value)))
            if token:
                if len(self._attributes) >= _CACHE_SIZE:
                    self._attributes.clear()
                self._attributes[token] = encoded
        return encoded

    def _name(self, name: str) -> bytes:
        encoded = self._names.get(name)
        if encoded is None:
            if len(self._names) >= _CACHE_SIZE:
                self._names.clear()
            encoded = self._names[name] = _field(b"\x2a", name.encode())
        return encoded

    def span(self, span: ReadableSpan) -> bytes:
        """One Span message (the SDK's encoding when this one does not cover the span)."""
        try:
            return self._span(span)
        except _Unusual:
            return bytes(_sdk_encoded(span).scope_spans[0].spans[0].SerializeToString())

    def _span(self, span: ReadableSpan) -> bytes:
        if span.events or span.links or span.dropped_attributes or span.dropped_events or span.dropped_links:
            raise _Unusual
        context = span.context
        parent = span.parent
        if context is None or span.start_time is None or span.end_time is None:
            raise _Unusual
        parts = [
            b"\x0a\x10",
            context.trace_id.to_bytes(16, "big"),
            b"\x12\x08",
            context.span_id.to_bytes(8, "big"),
        ]
        if context.trace_state:
            parts.append(_field(b"\x1a", context.trace_state.to_header().encode()))
        if parent is not None:
            parts += (b"\x22\x08", parent.span_id.to_bytes(8, "big"))
        parts += (
            self._name(span.name),
            b"\x30",
            varint(span.kind.value + 1),
            b"\x39",
            _FIXED64.pack(span.start_time),
            b"\x41",
            _FIXED64.pack(span.end_time),
        )
        attribute = self._attribute
        parts += [attribute(name, value) for name, value in (span.attributes or {}).items()]
        status = span.status
        code = _STATUS_CODES[status.status_code]
        body = b"\x18" + varint(code) if code else b""
        if status.description:
            body = _field(b"\x12", status.description.encode()) + body
        parts.append(_field(b"\x7a", body))
        parts.append(_FLAGS_REMOTE if parent is not None and parent.is_remote else _FLAGS_LOCAL)
        return b"".join(parts)

    def _headers(self, span: ReadableSpan) -> tuple[bytes, bytes]:
        """The encoded resource and scope of the span, from a cache keyed by both objects."""
        resource, scope = span.resource, span.instrumentation_scope
        cached = self._groups.get((id(resource), id(scope)))
        if cached is None or cached[0] is not resource or cached[1] is not scope:
            if len(self._groups) >= 64:
                self._groups.clear()
            cached = self._groups[(id(resource), id(scope))] = (resource, scope, *_without_spans(span))
        return cached[2], cached[3]

    def request(self, spans: Iterable[ReadableSpan]) -> bytes:
        """Spans grouped by resource, then by instrumentation scope, in the order they came."""
        groups: dict[bytes, dict[bytes, list[bytes]]] = {}
        for span in spans:
            resource, scope = self._headers(span)
            groups.setdefault(resource, {}).setdefault(scope, []).append(_field(b"\x12", self.span(span)))
        out = []
        for resource, scopes in groups.items():
            scope_spans = [_field(b"\x12", scope + b"".join(encoded)) for scope, encoded in scopes.items()]
            out.append(_field(b"\x0a", resource + b"".join(scope_spans)))
        return b"".join(out)


class WireSpanExporter(OTLPSpanExporter):
    """OTLPSpanExporter with SpanEncoder's encoding; the SDK's channel, retries and settings."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._encoder = SpanEncoder()

    def _translate_data(self, data: Sequence[ReadableSpan]) -> ExportTraceServiceRequest:
        # Parsing the bytes back is C work; the stub serializes a message object.
        return ExportTraceServiceRequest.FromString(self._encoder.request(data))
