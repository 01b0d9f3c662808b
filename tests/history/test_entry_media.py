"""Images and documents on entries: a screenshot in a tool result, an image in a user message.

Appended through PrepareTurn and AppendEntries, stored as sent, loaded into
ChatMessage.content_parts, counted by the thread model's provider rule, and
refused past their caps with every field named.
"""

from __future__ import annotations

import struct
import zlib

import grpc

from pioneer_grpc.caps.history import MAX_ENTRY_PARTS, MAX_INLINE_PART_BYTES
from pioneer_grpc.history import tokens
from pioneer_grpc.history.render import entry_counted_texts
from pioneer_grpc.providers.render import render
from pioneer_grpc.v1 import chat_pb2, history_pb2, provider_service_pb2, turn_service_pb2
from pioneer_grpc.v1 import history_service_pb2 as pb
from tests.history.rpc import ASSISTANT, TOOL, USER, entry, failure, load, tool_call
from tests.history.test_poisoned_threads import PROVIDERS
from tests.turn.test_prepare_turn import Client, compile_input


def png(width: int, height: int) -> bytes:
    """A grey PNG of the size (what a screenshot tool would return)."""

    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    rows = b"".join(b"\x00" + b"\x80" * width for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


SCREENSHOT = png(1024, 1024)


def image(data: bytes = SCREENSHOT, mime: str = "image/png") -> chat_pb2.ContentPart:
    return chat_pb2.ContentPart(image=chat_pb2.MediaPart(mime_type=mime, data=data))


def screenshot_turn(turn_id: str) -> list[history_pb2.ConversationEntry]:
    return [
        entry("u1", turn_id, USER, "What is on my screen?"),
        entry("a1", turn_id, ASSISTANT, tool_calls=[tool_call("call_0", "screenshot")]),
        entry(
            "r1",
            turn_id,
            TOOL,
            "the screen, 1024 x 1024",
            tool_call_id="call_0",
            name="screenshot",
            content_parts=[image()],
        ),
        entry("f1", turn_id, ASSISTANT, "A grey screen."),
    ]


def cost(e: history_pb2.ConversationEntry, tokenizer: str) -> int:
    return sum(tokens.count_blocking(entry_counted_texts(e), tokenizer)) + tokens.MESSAGE_OVERHEAD


async def test_a_screenshot_in_a_tool_result_is_stored_loaded_and_counted(pg_server):
    c = Client(pg_server)
    await c.thread("t", model="claude-sonnet-4-5")
    first, call, result, answer = screenshot_turn("turn-1")
    base = {"thread_id": "t", "turn_id": "turn-1", "compile_input": compile_input()}
    await c.prepare_turn(turn_service_pb2.PrepareTurnRequest(new_entries=[first], **base))
    reply = await c.prepare_turn(turn_service_pb2.PrepareTurnRequest(new_entries=[call, result], **base))
    # The round's own tool message carries the image as sent.
    assert list(reply.chat_request.messages[-1].content_parts) == [image()]
    await c.complete_turn(pb.CompleteTurnRequest(thread_id="t", turn_id="turn-1", entries=[answer]))
    loaded = await load(c, "t")
    tool_message = loaded.messages[2]
    assert tool_message.role == chat_pb2.CHAT_ROLE_TOOL
    assert tool_message.content == "the screen, 1024 x 1024"
    assert list(tool_message.content_parts) == [image()]
    # 1024 x 1024 on Claude: 1,048,576 / 750 = 1,398.1 -> 1,399 tokens, from the PNG's own header.
    texts = sum(cost(e, "claude_estimate") for e in (first, call, result, answer))
    assert loaded.report.tokens_before == texts + 1_399
    assert [d.code for d in loaded.report.diagnostics] == []
    listed = await c.list_entries(pb.ListEntriesRequest(thread_id="t"))
    assert [len(e.content_parts) for e in listed.entries] == [0, 0, 1, 0]
    assert listed.entries[2].content_parts[0].image.data == SCREENSHOT
    # The next turn's PrepareTurn sends it in history, as stored.
    reply = await c.prepare_turn(
        turn_service_pb2.PrepareTurnRequest(
            thread_id="t",
            turn_id="turn-2",
            new_entries=[entry("u2", "", USER, "And now?")],
            compile_input=compile_input(),
        )
    )
    assert list(reply.chat_request.messages[2].content_parts) == [image()]


async def test_parts_are_part_of_the_entry_for_repeats(pg_server):
    c = Client(pg_server)
    await c.thread("t")
    asked = entry("u1", "turn-1", USER, "Which is larger?", content_parts=[image(), image(png(8, 8))])
    append = pb.AppendEntriesRequest(thread_id="t", entries=[asked])
    assert (await c.append_entries(append)).created_count == 1
    assert (await c.append_entries(append)).existing_count == 1
    del asked.content_parts[1]
    error = await failure(c.append_entries(pb.AppendEntriesRequest(thread_id="t", entries=[asked])))
    assert error.code == grpc.StatusCode.ALREADY_EXISTS
    assert error.metadata["differing_fields"] == "content_parts"
    # An entry with parts and no text is not empty.
    only_image = entry("u2", "turn-1", USER, content_parts=[image()])
    only_image.content = ""
    await c.append_entries(pb.AppendEntriesRequest(thread_id="t", entries=[only_image]))
    assert await c.entry_count("t") == 2


async def test_part_caps_and_rules_name_every_field(pg_server):
    c = Client(pg_server)
    await c.thread("t")
    half = MAX_INLINE_PART_BYTES // 2
    entries = [
        entry("e1", "turn-1", USER, content_parts=[image(b"x" * (MAX_INLINE_PART_BYTES + 1))]),
        entry("e2", "turn-1", USER, content_parts=[image(mime="application/pdf")]),
        entry("e3", "turn-1", ASSISTANT, content_parts=[image()]),
        entry(
            "e4",
            "turn-1",
            USER,
            content_parts=[
                chat_pb2.ContentPart(audio=chat_pb2.MediaPart(mime_type="text/plain", uri="https://a"))
            ],
        ),
        entry("e5", "turn-1", USER, content_parts=[image(mime="")]),
        entry("e6", "turn-1", USER, content_parts=[chat_pb2.ContentPart(image=chat_pb2.MediaPart())]),
    ]
    error = await failure(c.append_entries(pb.AppendEntriesRequest(thread_id="t", entries=entries)))
    assert error.code == grpc.StatusCode.INVALID_ARGUMENT
    assert [field for field, _ in error.violations] == [
        "entries[0].content_parts[0].image.data",
        "entries[1].content_parts[0].image.mime_type",
        "entries[2].content_parts",
        "entries[3].content_parts[0].audio.mime_type",
        "entries[4].content_parts[0].image.mime_type",
        "entries[5].content_parts[0].image",
    ]
    many = entry("e0", "turn-1", USER, content_parts=[image()] * (MAX_ENTRY_PARTS + 1))
    error = await failure(c.append_entries(pb.AppendEntriesRequest(thread_id="t", entries=[many])))
    assert error.violations == [("entries[0].content_parts", f"at most {MAX_ENTRY_PARTS} items (got 17)")]
    # Parts each under their cap, over the entry's together (a request of its own: 12.5 MB).
    over = entry("e7", "turn-1", USER, content_parts=[image(b"y" * half)] * 5)
    error = await failure(c.append_entries(pb.AppendEntriesRequest(thread_id="t", entries=[over])))
    assert error.violations == [
        ("entries[0].content_parts", "at most 10,000,000 inline bytes an entry (got 12,500,000)")
    ]
    assert await c.entry_count("t") == 0


async def test_an_image_in_a_user_message_renders_for_every_provider(pg_server):
    c = Client(pg_server)
    await c.thread("t")
    asked = entry("u1", "", USER, "What is this?", content_parts=[image(png(64, 32))])
    for provider in PROVIDERS:
        reply = await c.prepare_turn(
            turn_service_pb2.PrepareTurnRequest(
                thread_id="t",
                turn_id="turn-1",
                new_entries=[asked],
                compile_input=compile_input(),
                provider=provider,
            )
        )
        assert reply.provider_body_json
        assert "iVBORw0KGgo" in reply.provider_body_json, provider  # the PNG, base64, in the body


async def test_a_screenshot_in_a_tool_result_renders_for_every_provider(pg_server):
    history = Client(pg_server)
    await history.create_thread(thread_id="t", config=history_pb2.ThreadConfig(model="m"))
    await history.complete_turn(thread_id="t", turn_id="turn-1", entries=screenshot_turn("turn-1"))
    chat = chat_pb2.ChatRequest(model="m", messages=(await load(history, "t")).messages)
    for provider in PROVIDERS:
        render(provider, chat)


async def test_count_tokens_counts_content_parts_as_a_load_counts_them(pg_server):
    """CountTokens of the messages a load returns is the load's own count: text parts with the
    text, images by the model's provider rule (here Claude's, from the PNG header)."""
    c = Client(pg_server)
    await c.thread("t", model="claude-sonnet-4-5")
    said = chat_pb2.ContentPart(text="and here is the second page of the same report, as text")
    turn = [
        entry("u1", "turn-1", USER, "Compare these.", content_parts=[image(png(800, 600)), said]),
        *screenshot_turn("turn-1")[1:],
    ]
    await c.complete_turn(pb.CompleteTurnRequest(thread_id="t", turn_id="turn-1", entries=turn))
    loaded = await load(c, "t")
    assert [d.code for d in loaded.report.diagnostics] == []  # every part sized: nothing assumed

    async def count(*messages: chat_pb2.ChatMessage) -> pb.CountTokensResponse:
        return await c.count_tokens(pb.CountTokensRequest(messages=messages, model="claude-sonnet-4-5"))

    counted = await count(*loaded.messages)
    assert counted.total_tokens == loaded.report.tokens_before
    # Without its parts, the first message counts less by the image (800 x 600 on Claude:
    # 480,000 / 750 = 640 tokens) and by its text part.
    bare_first = chat_pb2.ChatMessage()
    bare_first.CopyFrom(loaded.messages[0])
    del bare_first.content_parts[:]
    text_part = sum(tokens.count_blocking([said.text], "claude_estimate"))
    assert counted.token_counts[0] - (await count(bare_first)).token_counts[0] == 640 + text_part
    # A document without its page count adds nothing here (a load assumes its pages and says so).
    pdf = chat_pb2.MediaPart(mime_type="application/pdf", data=b"%PDF-1.4\n", filename="r.pdf")
    with_pdf = chat_pb2.ChatMessage()
    with_pdf.CopyFrom(bare_first)
    with_pdf.content_parts.add(file=pdf)
    assert (await count(with_pdf)).token_counts == (await count(bare_first)).token_counts


def _audio() -> chat_pb2.ContentPart:
    return chat_pb2.ContentPart(
        audio=chat_pb2.MediaPart(mime_type="audio/wav", data=b"RIFF\x24\x00\x00\x00WAVE")
    )


async def test_audio_in_a_user_message_renders_as_render_chat_request_renders_it(pg_server):
    """PrepareTurn takes the media kinds a ChatRequest takes: Gemini (which reads audio) gets it
    inline; a Claude model (which does not) gets a line of text and a notice; RenderChatRequest of
    the round's chat_request gives the very same body and notices."""
    c = Client(pg_server)
    for thread, model, provider in (
        ("t-gemini", "gemini-2.5-flash", provider_service_pb2.PROVIDER_GEMINI_GENERATE_CONTENT),
        ("t-claude", "claude-sonnet-4-5", provider_service_pb2.PROVIDER_ANTHROPIC_MESSAGES),
    ):
        await c.thread(thread, model=model)
        reply = await c.prepare_turn(
            turn_service_pb2.PrepareTurnRequest(
                thread_id=thread,
                turn_id="turn-1",
                new_entries=[entry("u1", "", USER, "What is said here?", content_parts=[_audio()])],
                compile_input=compile_input(),
                provider=provider,
            )
        )
        scratch = await c.render_chat_request(
            provider_service_pb2.RenderChatRequestRequest(provider=provider, chat_request=reply.chat_request)
        )
        assert reply.provider_body_json == scratch.body_json
        assert [n.code for n in reply.provider_notices] == [n.code for n in scratch.notices]
        if model.startswith("gemini"):
            assert '"mimeType":"audio/wav"' in reply.provider_body_json
            assert [n.code for n in reply.provider_notices] == []
        else:
            assert [n.code for n in reply.provider_notices] == ["media_not_sent"]
