"""What an append checks on each entry and its content parts, what parts count as, and the hash that
makes a repeated append idempotent (entries.py, parts.py)."""

from __future__ import annotations

import hashlib
import struct

import pytest

from pioneer_grpc.caps import NUL_PROBLEM
from pioneer_grpc.caps.history import MAX_ENTRY_PARTS, MAX_ID_CHARS, MAX_INLINE_PART_BYTES
from pioneer_grpc.errors import FieldViolation
from pioneer_grpc.history.entries import (
    artifact_refs_json,
    content_hash,
    differing_fields,
    entry_violations,
    id_violation,
    parse_artifact_refs,
    parse_tool_calls,
    thread_id_violation,
    tool_calls_json,
)
from pioneer_grpc.history.parts import (
    image_size,
    parse_parts,
    part_refs,
    part_texts,
    parts_blob,
    parts_violations,
)
from pioneer_grpc.v1 import chat_pb2, common_pb2, history_pb2
from tests.history.builders import ASSISTANT, TOOL, USER, entry

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00\x00\x00\rIHDR" + struct.pack(">II", 640, 480) + b"\x08\x02"
GIF = b"GIF89a" + struct.pack("<HH", 32, 16) + b"\x00"
# SOI, an APP0 segment of 16 bytes, then a baseline start of frame: 8 bits, height 100, width 200.
JPEG = b"\xff\xd8" + b"\xff\xe0" + struct.pack(">H", 16) + b"J" * 14 + b"\xff\xc0\x00\x11\x08\x00\x64\x00\xc8"


def pairs(violations: list[FieldViolation]) -> list[tuple[str, str]]:
    return [(v.field, v.description) for v in violations]


def image(data: bytes = b"", mime: str = "", uri: str = "") -> chat_pb2.ContentPart:
    media = chat_pb2.MediaPart(mime_type=mime)
    if uri:
        media.uri = uri
    else:
        media.data = data
    return chat_pb2.ContentPart(image=media)


def document(data: bytes, mime: str = "application/pdf") -> chat_pb2.ContentPart:
    return chat_pb2.ContentPart(file=chat_pb2.MediaPart(data=data, mime_type=mime))


def with_parts(*parts: chat_pb2.ContentPart, role: int = USER) -> history_pb2.ConversationEntry:
    made = entry("e1", role)
    made.content_parts.extend(parts)
    return made


def test_an_id_is_required_bounded_and_free_of_nul():
    assert pairs([id_violation("x", " ", "thread id")]) == [("x", "thread id is required")]
    assert pairs([id_violation("x", "")]) == [("x", "must not be empty")]
    long = "a" * (MAX_ID_CHARS + 1)
    assert pairs([id_violation("x", long, "turn_id")]) == [("x", "turn_id is longer than 200 characters")]
    assert pairs([id_violation("x", long)]) == [("x", "must not be longer than 200 characters")]
    assert id_violation("x", "a" * MAX_ID_CHARS) is None
    assert pairs([id_violation("x", "a\x00b")]) == [("x", NUL_PROBLEM)]
    assert pairs([thread_id_violation("")]) == [("thread_id", "thread id is required")]
    assert pairs([thread_id_violation("", "req.thread")]) == [("req.thread", "thread id is required")]
    assert thread_id_violation("t1") is None


def test_a_sound_batch_has_no_violations():
    call = entry("a", ASSISTANT, calls=("c1",))
    answer = entry("r", TOOL, answers="c1")
    answer.name = "n" * MAX_ID_CHARS
    assert entry_violations([entry("u"), call, answer, with_parts(image(PNG, "image/png"))]) == []


def test_every_problem_of_every_entry_is_named_by_its_field():
    tool_without_id = history_pb2.ConversationEntry(entry_id="r", turn_id="t", role=TOOL, content="x")
    user_calling = entry("u", USER, calls=("c1",))
    nameless_call = entry("a", ASSISTANT, calls=("",))
    nameless_call.tool_calls[0].name = ""
    long_name = entry("n")
    long_name.name = "n" * (MAX_ID_CHARS + 1)
    found = entry_violations(
        [
            history_pb2.ConversationEntry(role=USER, content="x"),
            history_pb2.ConversationEntry(entry_id="e", turn_id="t", role=99, content="x"),  # type: ignore[arg-type]
            tool_without_id,
            user_calling,
            nameless_call,
            long_name,
            with_parts(image(uri="gs://b/i.png"), role=ASSISTANT),
        ],
        prefix="batch",
    )
    assert pairs(found) == [
        ("batch[0].entry_id", "entry_id is required"),
        ("batch[0].turn_id", "turn_id is required"),
        ("batch[1].role", "role must be user, assistant, tool or system"),
        ("batch[2].tool_call_id", "a tool entry's tool_call_id is required"),
        ("batch[3].tool_calls", "only an assistant entry calls tools"),
        ("batch[4].tool_calls[0].id", "a tool call's id is required"),
        ("batch[4].tool_calls[0].name", "a tool call needs a name"),
        ("batch[5].name", "longer than 200 characters"),
        ("batch[6].content_parts", "only a user entry or a tool result carries content parts"),
    ]
    assert entry_violations([history_pb2.ConversationEntry(role=USER)])[0].field == "entries[0].entry_id"


def test_an_entry_id_twice_is_named_at_each_later_place():
    found = entry_violations(
        [entry("a"), entry("b"), entry("a"), entry("a"), entry("b"), entry("c")], prefix="new"
    )
    assert pairs(found) == [
        ("new[2].entry_id", "entry_id 'a' is also new[0]'s: each entry appears once in a request"),
        ("new[3].entry_id", "entry_id 'a' is also new[0]'s: each entry appears once in a request"),
        ("new[4].entry_id", "entry_id 'b' is also new[1]'s: each entry appears once in a request"),
    ]
    # Entries without an id are named for that alone, not as one another's twins.
    nameless = history_pb2.ConversationEntry(turn_id="t", role=USER, content="x")
    assert [v.field for v in entry_violations([nameless, nameless])] == [
        "entries[0].entry_id",
        "entries[1].entry_id",
    ]
    assert entry_violations([entry("a"), entry("b")]) == []


def test_parts_are_capped_in_count_and_inline_bytes():
    assert parts_violations(entry("u"), "e") == []
    too_many = with_parts(*[chat_pb2.ContentPart(text="x")] * (MAX_ENTRY_PARTS + 1))
    assert pairs(parts_violations(too_many, "e")) == [("e.content_parts", "at most 16 items (got 17)")]
    assert parts_violations(with_parts(*[chat_pb2.ContentPart(text="x")] * MAX_ENTRY_PARTS), "e") == []
    three = [document(b"%" * 4_000_000)] * 3
    assert pairs(parts_violations(with_parts(*three, role=TOOL), "e")) == [
        ("e.content_parts", "at most 10,000,000 inline bytes an entry (got 12,000,000)")
    ]
    assert parts_violations(with_parts(document(b"%" * 5_000_000), document(b"%" * 5_000_000)), "e") == []


def test_each_media_part_needs_a_source_a_mime_type_and_a_bounded_size():
    big = MAX_INLINE_PART_BYTES + 1
    found = parts_violations(
        with_parts(
            chat_pb2.ContentPart(text="fine"),
            chat_pb2.ContentPart(audio=chat_pb2.MediaPart(mime_type="image/png", uri="gs://a")),
            chat_pb2.ContentPart(image=chat_pb2.MediaPart(mime_type="image/png")),
            image(PNG),
            document(b"%" * big),
            image(uri="gs://b/x", mime="text/plain"),
            chat_pb2.ContentPart(),
        ),
        "e",
    )
    assert pairs(found) == [
        ("e.content_parts[1].audio.mime_type", "an audio mime type, not 'image/png'"),
        ("e.content_parts[2].image", "needs data (inline bytes) or uri"),
        ("e.content_parts[3].image.mime_type", "inline data needs its mime type"),
        ("e.content_parts[4].file.data", "at most 5,000,000 bytes inline (got 5,000,001): send a uri"),
        ("e.content_parts[5].image.mime_type", "an image's mime type, not 'text/plain'"),
        ("e.content_parts[6]", "a part is text, image, file, audio or video"),
    ]
    assert parts_violations(with_parts(document(b"%" * MAX_INLINE_PART_BYTES)), "e") == []
    assert parts_violations(with_parts(image(uri="gs://b/x", mime="image/webp")), "e") == []
    # Audio and video, as a ChatRequest message carries them.
    audio = chat_pb2.ContentPart(audio=chat_pb2.MediaPart(mime_type="audio/wav", data=b"RIFF"))
    video = chat_pb2.ContentPart(video=chat_pb2.MediaPart(uri="gs://b/clip.mp4", mime_type="video/mp4"))
    assert parts_violations(with_parts(audio, video), "e") == []


def test_parts_are_stored_as_one_blob_and_read_back():
    assert parts_blob(entry("u")) is None
    parts = [chat_pb2.ContentPart(text="look"), image(PNG, "image/png")]
    blob = parts_blob(with_parts(*parts))
    assert blob is not None
    assert parse_parts(blob) == parts
    assert parse_parts(None) == []
    assert parse_parts(b"") == []
    assert part_texts(
        with_parts(chat_pb2.ContentPart(text="a"), image(PNG), chat_pb2.ContentPart(text="b"))
    ) == [
        "a",
        "b",
    ]


def test_image_sizes_come_from_png_gif_and_jpeg_headers():
    assert image_size(PNG) == (640, 480)
    assert image_size(PNG[:23]) is None
    assert image_size(GIF) == (32, 16)
    assert image_size(b"GIF87a" + struct.pack("<HH", 7, 9)) == (7, 9)
    assert image_size(GIF[:9]) is None
    assert image_size(JPEG) == (200, 100)
    assert image_size(b"RIFF....WEBP") is None
    # A Huffman table (0xC4) is no frame: the walk goes on to the frame after it.
    dht = b"\xff\xc4" + struct.pack(">H", 4) + b"\x00\x00"
    assert image_size(b"\xff\xd8" + dht + b"\xff\xc2\x00\x11\x08\x00\x05\x00\x06") == (6, 5)
    assert image_size(b"\xff\xd8\x00\xc0\x00\x11\x08\x00\x05\x00\x06") is None
    assert image_size(b"\xff\xd8\xff\xe0\x00\x02") is None


def test_media_parts_count_as_the_artifact_refs_the_attachment_rules_take():
    made = with_parts(
        chat_pb2.ContentPart(text="x"),
        image(PNG, "image/png"),
        image(uri="gs://b/i.png"),
        document(b"%PDF-1.7 body"),
        image(b"not an image", "image/png"),
    )
    made.entry_id = "e7"
    assert part_refs(made) == [
        common_pb2.ArtifactRef(
            artifact_id="e7/content_parts[1]",
            kind="image",
            mime_type="image/png",
            size_bytes=len(PNG),
            width_px=640,
            height_px=480,
        ),
        common_pb2.ArtifactRef(artifact_id="e7/content_parts[2]", kind="image"),
        common_pb2.ArtifactRef(
            artifact_id="e7/content_parts[3]", kind="document", mime_type="application/pdf", size_bytes=13
        ),
        common_pb2.ArtifactRef(
            artifact_id="e7/content_parts[4]", kind="image", mime_type="image/png", size_bytes=12
        ),
    ]
    assert not part_refs(made)[1].HasField("size_bytes")
    assert not part_refs(made)[3].HasField("width_px")


def test_tool_calls_and_artifact_refs_are_stored_as_compact_json_and_read_back():
    call = entry("a", ASSISTANT, calls=("c1",))
    call.tool_calls[0].arguments = '{"path": "é"}'
    assert tool_calls_json(call) == '[{"id":"c1","name":"read_file","arguments":"{\\"path\\": \\"é\\"}"}]'
    assert parse_tool_calls(tool_calls_json(call)) == list(call.tool_calls)
    assert parse_tool_calls("[]") == []
    ref = common_pb2.ArtifactRef(artifact_id="a1", display_name="ü.png", version_id="")
    refs = entry("u")
    refs.artifact_refs.append(ref)
    assert artifact_refs_json(refs) == '[{"artifact_id":"a1","display_name":"ü.png","version_id":""}]'
    assert parse_artifact_refs(artifact_refs_json(refs)) == [ref]
    assert parse_artifact_refs(artifact_refs_json(refs))[0].HasField("version_id")
    assert parse_artifact_refs("[]") == []


def test_the_content_hash_of_a_stored_entry_never_changes():
    # Repeats of entries stored by earlier versions must match what they stored.
    plain = history_pb2.ConversationEntry(entry_id="e1", turn_id="t1", role=USER, content="hello")
    canonical = (
        '{"artifact_refs":"[]","content":"hello","name":"","reasoning_content":null,"role":1,'
        '"tool_call_id":"","tool_calls":"[]","turn_id":"t1"}'
    )
    assert content_hash(plain) == hashlib.sha256(canonical.encode()).hexdigest()
    assert content_hash(plain) == "b484b8407a7e920fee6d095c2cf3ba9c6831bda716f91b7fc6f9b9ed8ce5fdf0"
    with_part = history_pb2.ConversationEntry()
    with_part.CopyFrom(plain)
    with_part.content_parts.append(chat_pb2.ContentPart(text="p"))
    blob = chat_pb2.ChatMessage(content_parts=with_part.content_parts).SerializeToString(deterministic=True)
    # Keys sorted: the parts' digest follows the content.
    canonical_with_part = canonical.replace(
        '"content":"hello",', f'"content":"hello","content_parts":"{hashlib.sha256(blob).hexdigest()}",'
    )
    assert content_hash(with_part) == hashlib.sha256(canonical_with_part.encode()).hexdigest()


@pytest.mark.parametrize(
    "change",
    [
        lambda e: setattr(e, "turn_id", "t2"),
        lambda e: setattr(e, "role", ASSISTANT),
        lambda e: setattr(e, "content", "hello!"),
        lambda e: e.tool_calls.append(common_pb2.ToolCall(id="c", name="n", arguments="{}")),
        lambda e: setattr(e, "tool_call_id", "c"),
        lambda e: setattr(e, "name", "n"),
        lambda e: e.artifact_refs.append(common_pb2.ArtifactRef(artifact_id="a")),
        lambda e: setattr(e, "reasoning_content", ""),
        lambda e: e.content_parts.append(chat_pb2.ContentPart(text="p")),
    ],
)
def test_every_client_field_changes_the_hash_and_is_named_in_a_conflict(change):
    stored = history_pb2.ConversationEntry(entry_id="e1", turn_id="t1", role=USER, content="hello")
    new = history_pb2.ConversationEntry()
    new.CopyFrom(stored)
    change(new)
    assert content_hash(new) != content_hash(stored)
    assert len(differing_fields(stored, new)) == 1
    assert differing_fields(stored, stored) == []


def test_a_conflict_names_the_differing_fields_in_order():
    stored = history_pb2.ConversationEntry(entry_id="e1", turn_id="t1", role=USER, content="a")
    new = history_pb2.ConversationEntry(
        entry_id="e9", turn_id="t1", role=USER, content="b", reasoning_content="r", sequence=4
    )
    assert differing_fields(stored, new) == ["content", "reasoning_content"]
    new.ClearField("reasoning_content")
    assert differing_fields(stored, new) == ["content"]
    # The entry id, sequence and counts are the server's: the hash ignores them.
    new.content = "a"
    new.token_count = 5
    assert content_hash(new) == content_hash(stored)
