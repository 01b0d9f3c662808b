"""User content in each provider's body: media by file id, URL or data, text parts, names and refusals.

Every body here also passes the official SDK's request types (tests/providers/sdk_types.py).
"""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from google.protobuf import json_format

from pioneer_grpc.errors import FieldViolation, InvalidArgument
from pioneer_grpc.providers import render
from pioneer_grpc.providers.conversation import Notice
from pioneer_grpc.v1 import chat_pb2, provider_service_pb2
from tests.providers.conformance import conformances

P = provider_service_pb2
ANTHROPIC = P.PROVIDER_ANTHROPIC_MESSAGES
CHAT = P.PROVIDER_OPENAI_CHAT_COMPLETIONS
RESPONSES = P.PROVIDER_OPENAI_RESPONSES
GEMINI = P.PROVIDER_GEMINI_GENERATE_CONTENT
MODELS = {ANTHROPIC: "claude-sonnet-4-6", CHAT: "gpt-5", RESPONSES: "gpt-5", GEMINI: "gemini-2.5-flash"}
# What each body calls its conversation.
CONVERSATION = {ANTHROPIC: "messages", CHAT: "messages", RESPONSES: "input", GEMINI: "contents"}
TEXT = "héllo"
TEXT_B64 = base64.b64encode(TEXT.encode()).decode()
TEXT_DATA_URL = f"data:application/pdf;base64,{TEXT_B64}"


def _user(text: str, *parts: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"role": "CHAT_ROLE_USER", "content": text, "contentParts": list(parts), **extra}


def _assistant(text: str) -> dict[str, Any]:
    return {"role": "CHAT_ROLE_ASSISTANT", "content": text}


def _request(provider: int, *messages: dict[str, Any]) -> chat_pb2.ChatRequest:
    return json_format.ParseDict(
        {"model": MODELS[provider], "messages": list(messages)}, chat_pb2.ChatRequest()
    )


def _conversation(provider: int, *messages: dict[str, Any]) -> tuple[list[Any], tuple[Notice, ...]]:
    out = render(provider, _request(provider, *messages))
    body = json.loads(out.body_json)
    conformances()[provider].sdk_types(body, MODELS[provider])
    return body[CONVERSATION[provider]], out.notices


def _refusal(provider: int, part: dict[str, Any]) -> list[FieldViolation]:
    with pytest.raises(InvalidArgument) as info:
        render(provider, _request(provider, _user("hi", part)))
    return info.value.violations


def _image(**source: str) -> dict[str, Any]:
    return {"image": {"mimeType": "image/png", **source}}


def _file(mime_type: str = "application/pdf", **source: str) -> dict[str, Any]:
    return {"file": {"mimeType": mime_type, **source}}


# --- Anthropic ---------------------------------------------------------------------------------


def test_anthropic_media_by_file_id_url_and_plain_text_data() -> None:
    conversation, _ = _conversation(
        ANTHROPIC,
        _user(
            "hi",
            _image(uri="file_img"),
            _file(uri="file_doc", filename="r.pdf"),
            _file(uri="https://example.com/r.pdf"),
            _file("text/plain", data=TEXT_B64, filename="n.txt"),
        ),
    )
    assert conversation == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "hi"},
                {"type": "image", "source": {"type": "file", "file_id": "file_img"}},
                {"type": "document", "source": {"type": "file", "file_id": "file_doc"}, "title": "r.pdf"},
                {"type": "document", "source": {"type": "url", "url": "https://example.com/r.pdf"}},
                {
                    "type": "document",
                    "source": {"type": "text", "media_type": "text/plain", "data": TEXT},
                    "title": "n.txt",
                },
            ],
        }
    ]


@pytest.mark.parametrize(
    ("part", "description"),
    [
        (_file("text/plain", data=base64.b64encode(b"\xff\xfe").decode()), "text/plain data must be UTF-8"),
        (_file("text/csv", data=TEXT_B64), "Anthropic takes application/pdf or text/plain documents"),
        (
            {"image": {"mimeType": "image/bmp", "data": TEXT_B64}},
            "Anthropic takes image/gif, image/jpeg, image/png, image/webp images",
        ),
    ],
)
def test_anthropic_refuses_media_it_cannot_take_with_the_field_named(
    part: dict[str, Any], description: str
) -> None:
    kind = next(iter(part))
    assert _refusal(ANTHROPIC, part) == [
        FieldViolation(f"chat_request.messages[0].content_parts[0].{kind}", description)
    ]


# --- OpenAI Chat Completions -------------------------------------------------------------------


def test_chat_files_by_id_and_data_after_text_parts_with_the_senders_name() -> None:
    conversation, _ = _conversation(
        CHAT, _user("", {"text": "look"}, _file(uri="file-abc"), _file(data=TEXT_B64), name="alice")
    )
    assert conversation == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "look"},
                {"type": "file", "file": {"file_id": "file-abc"}},
                {"type": "file", "file": {"filename": "attachment", "file_data": TEXT_DATA_URL}},
            ],
            "name": "alice",
        }
    ]


@pytest.mark.parametrize(
    ("part", "description"),
    [
        (_image(uri="file-abc"), "Chat Completions takes images as a URL or data, not a file id"),
        (
            _file(uri="https://example.com/r.pdf"),
            "Chat Completions takes files as data or a file id, not a URL",
        ),
    ],
)
def test_chat_refuses_media_sources_it_cannot_take_with_the_field_named(
    part: dict[str, Any], description: str
) -> None:
    kind = next(iter(part))
    assert _refusal(CHAT, part) == [
        FieldViolation(f"chat_request.messages[0].content_parts[0].{kind}", description)
    ]


# --- OpenAI Responses --------------------------------------------------------------------------


def test_responses_media_by_file_id_url_and_data() -> None:
    conversation, _ = _conversation(
        RESPONSES,
        _user(
            "hi",
            _image(uri="file-img"),
            _file(uri="file-doc"),
            _file(uri="https://example.com/r.pdf"),
            _file(data=TEXT_B64),
        ),
    )
    assert conversation == [
        {
            "role": "user",
            "content": [
                {"type": "input_text", "text": "hi"},
                {"type": "input_image", "detail": "auto", "file_id": "file-img"},
                {"type": "input_file", "file_id": "file-doc"},
                {"type": "input_file", "file_url": "https://example.com/r.pdf"},
                {"type": "input_file", "filename": "attachment", "file_data": TEXT_DATA_URL},
            ],
        }
    ]


# --- Gemini ------------------------------------------------------------------------------------


def test_gemini_sends_no_empty_text_part_before_the_parts() -> None:
    conversation, _ = _conversation(GEMINI, _user("", {"text": "look"}))
    assert conversation == [{"role": "user", "parts": [{"text": "look"}]}]


def test_gemini_refuses_a_file_uri_without_its_mime_type() -> None:
    assert _refusal(GEMINI, {"image": {"uri": "https://example.com/a.png"}}) == [
        FieldViolation(
            "chat_request.messages[0].content_parts[0].image.mime_type",
            "Gemini needs the MIME type of a file URI",
        )
    ]


def test_gemini_joins_an_assistant_message_to_the_model_turn_just_before_it() -> None:
    conversation, notices = _conversation(
        GEMINI, _user("a"), _assistant("b"), _user("c"), _assistant("d"), _assistant("e")
    )
    assert conversation == [
        {"role": "user", "parts": [{"text": "a"}]},
        {"role": "model", "parts": [{"text": "b"}]},
        {"role": "user", "parts": [{"text": "c"}]},
        {"role": "model", "parts": [{"text": "d"}, {"text": "e"}]},
    ]
    assert [(n.code, n.field) for n in notices] == [("assistant_messages_merged", "chat_request.messages[4]")]
