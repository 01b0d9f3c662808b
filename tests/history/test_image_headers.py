"""Image sizes read from PNG, GIF and JPEG headers at their limits: the shortest header, sizes past
a signed 16 or 32-bit integer, the JPEG markers that are not frames (parts.py)."""

from __future__ import annotations

import struct

from pioneer_grpc.history.parts import image_size, part_refs
from pioneer_grpc.v1 import chat_pb2
from tests.history.builders import USER, entry

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def png(width: int, height: int) -> bytes:
    """The shortest PNG header that states a size: 24 bytes."""
    return PNG_SIGNATURE + b"\x00\x00\x00\rIHDR" + struct.pack(">II", width, height)


def jpeg(*segments: bytes) -> bytes:
    return b"\xff\xd8" + b"".join(segments)


def segment(marker: int, body: bytes) -> bytes:
    return bytes([0xFF, marker]) + struct.pack(">H", len(body) + 2) + body


def frame(marker: int, width: int, height: int) -> bytes:
    return segment(marker, b"\x08" + struct.pack(">HH", height, width) + b"\x03\x01\x22\x00")


def test_png_sizes_from_the_shortest_header_up_to_32_bits():
    assert len(png(1, 1)) == 24
    assert image_size(png(640, 480)) == (640, 480)
    assert image_size(png(3_000_000_000, 2)) == (3_000_000_000, 2)


def test_gif_sizes_up_to_16_bits():
    assert image_size(b"GIF89a" + struct.pack("<HH", 40_000, 65_535)) == (40_000, 65_535)


def test_jpeg_sizes_up_to_16_bits_after_any_segment_length():
    exif = segment(0xE1, b"E" * 40_000)
    assert image_size(jpeg(exif, frame(0xC0, 50_000, 40_000), b"\xff\xda" + b"\x00" * 20)) == (50_000, 40_000)


def test_every_start_of_frame_marker_counts_and_the_others_are_skipped():
    assert image_size(jpeg(frame(0xCF, 7, 9))) == (7, 9)
    # Huffman tables (C4), the JPEG extension (C8), arithmetic coding (CC) and a restart marker (D0)
    # are no frames: the walk goes on to the frame after them.
    for marker in (0xC4, 0xC8, 0xCC, 0xD0):
        assert image_size(jpeg(segment(marker, b"\x00" * 8), frame(0xC2, 12, 34))) == (12, 34)


def test_a_document_that_starts_like_an_image_states_no_pixels():
    document = entry("d", USER, content="see")
    document.content_parts.append(
        chat_pb2.ContentPart(file=chat_pb2.MediaPart(data=png(640, 480), mime_type="application/pdf"))
    )
    [ref] = part_refs(document)
    assert ref.kind == "document"
    assert not ref.HasField("width_px")
    assert not ref.HasField("height_px")
