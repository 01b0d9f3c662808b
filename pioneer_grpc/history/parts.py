"""Content parts on entries: which an entry may carry, how they are stored, and what they count as.

A user entry or a tool result may carry text, image, file (document), audio and
video parts, the kinds a ChatRequest message carries, each inline (bytes and mime
type) or by reference (a URI). They are stored as sent (one serialized blob a row)
and loaded into ChatMessage.content_parts, so PrepareTurn renders them as
RenderChatRequest does. For budgets an image or document part counts as an
ArtifactRef would (models/attachments.py): an inline image by the size its header
states, an inline PDF by its bytes, a reference by the rule's default; audio and
video have no published rule that needs no duration, and count as nothing.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable

from pioneer_grpc.caps.history import MAX_ENTRY_PARTS, MAX_INLINE_ENTRY_BYTES, MAX_INLINE_PART_BYTES
from pioneer_grpc.errors import FieldViolation
from pioneer_grpc.v1 import chat_pb2, common_pb2, history_pb2

CARRIERS = (history_pb2.ENTRY_ROLE_USER, history_pb2.ENTRY_ROLE_TOOL)
MEDIA = ("image", "file", "audio", "video")
# Kinds whose mime type must be of their family: the family, and what the kind is called.
_MIME_FAMILY = {
    "image": ("image/", "an image's"),
    "audio": ("audio/", "an audio"),
    "video": ("video/", "a video"),
}


def parts_violations(entry: history_pb2.ConversationEntry, path: str) -> list[FieldViolation]:
    """What is wrong with the entry's content parts (caps of count and inline bytes included)."""
    if not entry.content_parts:
        return []
    field = f"{path}.content_parts"
    if entry.role not in CARRIERS:
        return [FieldViolation(field, "only a user entry or a tool result carries content parts")]
    if len(entry.content_parts) > MAX_ENTRY_PARTS:
        return [FieldViolation(field, f"at most {MAX_ENTRY_PARTS} items (got {len(entry.content_parts):,})")]
    found: list[FieldViolation] = []
    for i, part in enumerate(entry.content_parts):
        found += _part_violations(part, f"{field}[{i}]")
    inline = sum(
        len(getattr(p, kind).data) for p in entry.content_parts if (kind := p.WhichOneof("part")) in MEDIA
    )
    if inline > MAX_INLINE_ENTRY_BYTES:
        found.append(
            FieldViolation(
                field, f"at most {MAX_INLINE_ENTRY_BYTES:,} inline bytes an entry (got {inline:,})"
            )
        )
    return found


def _part_violations(part: chat_pb2.ContentPart, at: str) -> list[FieldViolation]:
    kind = part.WhichOneof("part")
    if kind == "text":
        return []
    if kind not in MEDIA:
        return [FieldViolation(at, "a part is text, image, file, audio or video")]
    media: chat_pb2.MediaPart = getattr(part, kind)
    source = media.WhichOneof("source")
    found: list[FieldViolation] = []
    if source is None:
        found.append(FieldViolation(f"{at}.{kind}", "needs data (inline bytes) or uri"))
    if source == "data" and not media.mime_type:
        found.append(FieldViolation(f"{at}.{kind}.mime_type", "inline data needs its mime type"))
    if source == "data" and len(media.data) > MAX_INLINE_PART_BYTES:
        found.append(
            FieldViolation(
                f"{at}.{kind}.data",
                f"at most {MAX_INLINE_PART_BYTES:,} bytes inline (got {len(media.data):,}): send a uri",
            )
        )
    family, called = _MIME_FAMILY.get(kind, ("", ""))
    if family and media.mime_type and not media.mime_type.startswith(family):
        found.append(FieldViolation(f"{at}.{kind}.mime_type", f"{called} mime type, not {media.mime_type!r}"))
    return found


def parts_blob(entry: history_pb2.ConversationEntry) -> bytes | None:
    """The parts as stored: serialized as ChatMessage.content_parts; None without parts."""
    if not entry.content_parts:
        return None
    return chat_pb2.ChatMessage(content_parts=entry.content_parts).SerializeToString(deterministic=True)


def parse_parts(blob: bytes | None) -> list[chat_pb2.ContentPart]:
    if not blob:
        return []
    return list(chat_pb2.ChatMessage.FromString(blob).content_parts)


def part_texts(entry: history_pb2.ConversationEntry) -> list[str]:
    """The text parts, counted with the entry's text."""
    return [part.text for part in entry.content_parts if part.WhichOneof("part") == "text"]


def image_size(data: bytes) -> tuple[int, int] | None:
    """(width, height) from a PNG, GIF or JPEG header; None when the bytes are none of those."""
    if data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) >= 24:
        width, height = struct.unpack(">II", data[16:24])
        return width, height
    if data[:6] in (b"GIF87a", b"GIF89a") and len(data) >= 10:
        width, height = struct.unpack("<HH", data[6:10])
        return width, height
    if data[:2] == b"\xff\xd8":
        return _jpeg_size(data)
    return None


def _jpeg_size(data: bytes) -> tuple[int, int] | None:
    at = 2
    while at + 9 <= len(data):
        if data[at] != 0xFF:
            return None
        marker = data[at + 1]
        length = struct.unpack(">H", data[at + 2 : at + 4])[0]
        # Start of frame (baseline, progressive, ...): height then width.
        if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
            height, width = struct.unpack(">HH", data[at + 5 : at + 9])
            return width, height
        at += 2 + length
    return None


def part_refs(entry: history_pb2.ConversationEntry) -> list[common_pb2.ArtifactRef]:
    """Each image and document part of the entry as the ArtifactRef the attachment rules count."""
    return media_refs(entry.entry_id, entry.content_parts)


def media_refs(owner: str, parts: Iterable[chat_pb2.ContentPart]) -> list[common_pb2.ArtifactRef]:
    """Each image and document part as the ArtifactRef the attachment rules count, named
    `<owner>/content_parts[i]` (so each counts once, and no part stands for another owner's)."""
    refs: list[common_pb2.ArtifactRef] = []
    for i, part in enumerate(parts):
        kind = part.WhichOneof("part")
        if kind not in ("image", "file"):
            continue
        media: chat_pb2.MediaPart = getattr(part, kind)
        ref = common_pb2.ArtifactRef(
            artifact_id=f"{owner}/content_parts[{i}]",
            kind="image" if kind == "image" else "document",
        )
        if media.mime_type:
            ref.mime_type = media.mime_type
        if media.WhichOneof("source") == "data":
            ref.size_bytes = len(media.data)
            size = image_size(media.data) if kind == "image" else None
            if size is not None:
                ref.width_px, ref.height_px = size
        refs.append(ref)
    return refs
