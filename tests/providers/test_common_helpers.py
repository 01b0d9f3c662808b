"""The shared helpers of providers/common.py, value by value.

The message paths a violation names, the compiled prompt split at its marker, the
text of a message with parts, the leading system messages taken out, the argument,
media and schema checks with the exact description a caller reads, and schema
numbers that come back as ints only where a double holds them exactly.
"""

from __future__ import annotations

import pytest
from google.protobuf import struct_pb2

from pioneer_grpc.caps.json_text import LONE_SURROGATE
from pioneer_grpc.compiler.boundary import CACHE_BOUNDARY
from pioneer_grpc.providers import body_json, common
from pioneer_grpc.providers.common import (
    ONE_CALL_SOURCE_BYTES,
    Media,
    Options,
    Prepared,
    encoded_body,
    parse_arguments,
    resolve_media,
    split_compiled,
    struct_to_dict,
    system_messages,
    take_leading_system,
    text_of,
    tool_schema,
)
from pioneer_grpc.v1 import chat_pb2, prompt_pb2

SYSTEM = chat_pb2.CHAT_ROLE_SYSTEM
USER = chat_pb2.CHAT_ROLE_USER
ASSISTANT = chat_pb2.CHAT_ROLE_ASSISTANT
CORE = CACHE_BOUNDARY.strip()


def _prepared(request: chat_pb2.ChatRequest, origins: tuple[int, ...] = ()) -> Prepared:
    return Prepared(
        request=request,
        options=Options(),
        path="chat_request",
        tools=[],
        choice=chat_pb2.TOOL_CHOICE_MODE_UNSPECIFIED,
        choice_name="",
        parallel=None,
        stable="",
        dynamic="",
        origins=origins,
    )


def _message(role: int, content: str = "", *parts: str) -> chat_pb2.ChatMessage:
    return chat_pb2.ChatMessage(
        role=role,  # type: ignore[arg-type]
        content=content,
        content_parts=[chat_pb2.ContentPart(text=text) for text in parts],
    )


# --- message paths ----------------------------------------------------------------------


def test_a_message_path_names_the_callers_message_it_came_from() -> None:
    prepared = _prepared(chat_pb2.ChatRequest(), origins=(0, 2, 5))
    assert prepared.message_path(1) == "chat_request.messages[2]"
    assert prepared.message_path(2) == "chat_request.messages[5]"


def test_a_message_past_the_origins_keeps_its_own_index() -> None:
    prepared = _prepared(chat_pb2.ChatRequest(), origins=(0, 2))
    assert prepared.message_path(2) == "chat_request.messages[2]"
    assert prepared.message_path(7) == "chat_request.messages[7]"


# --- the body's encoder -----------------------------------------------------------------


def test_a_body_rendered_from_exactly_the_one_call_size_is_written_in_one_call(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def refused(body: object) -> bytes:
        raise AssertionError("written in pieces")

    monkeypatch.setattr(body_json, "encoded", refused)
    body = {"model": "m", "n": 1.5}
    assert encoded_body(body, source_bytes=ONE_CALL_SOURCE_BYTES) == b'{"model":"m","n":1.5}'
    assert common.dumps(body) == '{"model":"m","n":1.5}'
    with pytest.raises(AssertionError, match="written in pieces"):
        encoded_body(body, source_bytes=ONE_CALL_SOURCE_BYTES + 1)


# --- the compiled prompt ----------------------------------------------------------------


def test_halves_given_apart_win_over_the_full_text() -> None:
    compiled = prompt_pb2.CompiledPromptPayload(
        stable_system_text="S", dynamic_system_text="D", full_system_text="X" + CACHE_BOUNDARY + "Y"
    )
    assert split_compiled(compiled) == ("S", "D")


def test_a_dynamic_half_alone_is_not_replaced_by_the_full_text() -> None:
    compiled = prompt_pb2.CompiledPromptPayload(
        dynamic_system_text="D", full_system_text="X" + CACHE_BOUNDARY + "Y"
    )
    assert split_compiled(compiled) == ("", "D")
    compiled = prompt_pb2.CompiledPromptPayload(
        stable_system_text="S", full_system_text="X" + CACHE_BOUNDARY + "Y"
    )
    assert split_compiled(compiled) == ("S", "")


def test_the_full_text_is_split_at_its_first_marker() -> None:
    compiled = prompt_pb2.CompiledPromptPayload(
        full_system_text="a" + CACHE_BOUNDARY + "b" + CACHE_BOUNDARY + "c"
    )
    assert split_compiled(compiled) == ("a", "bc")


def test_a_full_text_without_a_marker_is_all_stable() -> None:
    compiled = prompt_pb2.CompiledPromptPayload(full_system_text="only stable")
    assert split_compiled(compiled) == ("only stable", "")


# --- message text -----------------------------------------------------------------------


def test_text_parts_follow_the_content_one_a_line() -> None:
    message = _message(USER, "first", "second", "", "third")
    assert text_of(message) == "first\nsecond\nthird"


def test_markers_are_removed_from_system_text_parts_only() -> None:
    system = _message(SYSTEM, "a" + CACHE_BOUNDARY + "b", "c " + CORE + " d")
    assert text_of(system) == "ab\nc  d"
    user = _message(USER, "", "c " + CORE + " d")
    assert text_of(user) == "c " + CORE + " d"


def test_system_messages_are_the_texts_of_the_system_role_in_order() -> None:
    request = chat_pb2.ChatRequest(
        messages=[
            _message(USER, "hi"),
            _message(SYSTEM, "be brief", "and kind"),
            _message(ASSISTANT, "ok"),
            _message(SYSTEM, ""),
            _message(SYSTEM, "last"),
        ]
    )
    assert system_messages(_prepared(request)) == ["be brief\nand kind", "last"]


def test_every_leading_system_message_is_taken_out() -> None:
    request = chat_pb2.ChatRequest(
        messages=[
            _message(SYSTEM, "one"),
            _message(SYSTEM, "two", "parts"),
            _message(SYSTEM, "three"),
            _message(USER, "hi"),
            _message(SYSTEM, "later"),
        ]
    )
    assert take_leading_system(request) == ["one", "two\nparts", "three"]
    assert [m.content for m in request.messages] == ["hi", "later"]


# --- tool arguments ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ("[" * 65 + "]" * 65, "arguments nest deeper than 64 levels"),
        (
            '{"a": 1,}',
            "arguments are not valid JSON: Expecting property name enclosed in double quotes at char 8",
        ),
        ("[1, 2]", "arguments must be a JSON object"),
        ('"text"', "arguments must be a JSON object"),
        ('{"a": "\\ud800"}', f"arguments are not valid JSON: {LONE_SURROGATE}"),
    ],
)
def test_arguments_that_are_no_json_object_are_described(arguments: str, message: str) -> None:
    with pytest.raises(ValueError) as caught:
        parse_arguments(arguments)
    assert str(caught.value) == message


def test_a_paired_surrogate_escape_is_a_character() -> None:
    assert parse_arguments('{"a": "\\ud83d\\ude00"}') == {"a": "\U0001f600"}


# --- media ------------------------------------------------------------------------------


def _media(**fields: object) -> chat_pb2.MediaPart:
    return chat_pb2.MediaPart(**fields)  # type: ignore[arg-type]


def test_inline_data_is_base64_with_its_mime_type_and_filename() -> None:
    media = _media(mime_type="image/png", data=b"ABC", filename="a.png")
    assert resolve_media("image", media) == Media("image", "image/png", "a.png", data_b64="QUJD")


def test_a_data_uri_gives_its_own_mime_type_and_payload() -> None:
    media = _media(uri="data:image/png;base64,QUJD", filename="a.png", mime_type="image/jpeg")
    assert resolve_media("image", media) == Media("image", "image/png", "a.png", data_b64="QUJD")


def test_a_data_uri_without_a_mime_type_takes_the_parts() -> None:
    media = _media(uri="data:;base64,QUJD", mime_type="application/pdf", filename="f.pdf")
    assert resolve_media("file", media) == Media("file", "application/pdf", "f.pdf", data_b64="QUJD")


def test_a_url_and_a_file_id_keep_the_parts_fields() -> None:
    http = _media(uri="http://example.com/a.png", mime_type="image/png", filename="a.png")
    assert resolve_media("image", http) == Media(
        "image", "image/png", "a.png", url="http://example.com/a.png"
    )
    https = _media(uri="https://example.com/a.wav", filename="a.wav")
    assert resolve_media("audio", https) == Media("audio", "", "a.wav", url="https://example.com/a.wav")
    file_id = _media(uri="file-abc123", mime_type="application/pdf", filename="r.pdf")
    assert resolve_media("file", file_id) == Media("file", "application/pdf", "r.pdf", file_id="file-abc123")


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"data": b"ABC"}, "mime_type is required with inline data"),
        ({"uri": "data:;base64,QUJD"}, "mime_type is required with inline data"),
        ({"uri": "data:image/png,QUJD"}, "a data: URI must be base64 (data:MIME;base64,...)"),
        ({"uri": "data:image/png;base64"}, "a data: URI must be base64 (data:MIME;base64,...)"),
        ({"uri": "data:text/a,b;base64,QUJD"}, "a data: URI must be base64 (data:MIME;base64,...)"),
        ({"uri": "data:image/png;base64,Q@JD"}, "the data: URI payload is not valid base64"),
        ({"uri": "   "}, "uri is empty"),
        ({"mime_type": "image/png"}, "needs data or uri"),
    ],
)
def test_media_that_cannot_be_sent_is_described(fields: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError) as caught:
        resolve_media("image", _media(**fields))
    assert str(caught.value) == message


# --- schemas ----------------------------------------------------------------------------


def _struct(value: dict[str, object]) -> struct_pb2.Struct:
    struct = struct_pb2.Struct()
    struct.update(value)
    return struct


def test_schema_numbers_are_ints_only_below_two_to_the_53() -> None:
    schema = struct_to_dict(_struct({"small": 200.0, "edge": float(2**53), "big": float(2**60), "half": 2.5}))
    assert schema == {"big": float(2**60), "edge": float(2**53), "half": 2.5, "small": 200}
    assert [type(schema[k]) for k in ("big", "edge", "half", "small")] == [float, float, float, int]
    assert (
        encoded_body(schema)
        == b'{"big":1.152921504606847e+18,"edge":9007199254740992.0,"half":2.5,"small":200}'
    )


def test_schema_booleans_and_nulls_keep_their_kind() -> None:
    assert struct_to_dict(_struct({"t": True, "f": False, "n": None, "s": "x"})) == {
        "f": False,
        "n": None,
        "s": "x",
        "t": True,
    }


def test_a_schema_number_must_be_finite() -> None:
    with pytest.raises(ValueError) as caught:
        struct_to_dict(_struct({"maximum": float("inf")}))
    assert str(caught.value) == "numbers must be finite"


def test_a_tool_schema_must_be_an_object_schema() -> None:
    tool = chat_pb2.ToolDefinition(name="t", parameters=_struct({"type": "array"}))
    with pytest.raises(ValueError) as caught:
        tool_schema(tool)
    assert str(caught.value) == 'must be an object schema ("type": "object")'
