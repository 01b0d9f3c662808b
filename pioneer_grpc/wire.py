"""Protobuf wire framing, for answers assembled from pieces encoded once.

A message's encoding is the concatenation of its fields' encodings, and a
repeated field's elements may arrive one field record at a time; so a response
can be written as the encoding of its small fields followed by records whose
bytes were encoded earlier (a thread's history, kept encoded between rounds).
Encoding one large message in one call costs about ten times more in the upb
runtime than joining its parts, which is why the hot answers are built this way.
"""

from __future__ import annotations

from collections.abc import Iterable

_LENGTH_DELIMITED = 2


_ONE_BYTE = tuple(bytes([i]) for i in range(128))


def varint(value: int) -> bytes:
    """A protobuf varint; a negative value as its 64-bit two's complement (int32 and int64 fields)."""
    if 0 <= value < 128:
        return _ONE_BYTE[value]
    if value < 0:
        value += 1 << 64
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def field_record(number: int, payload: bytes) -> bytes:
    """One length-delimited field (a message, bytes or string) with its tag."""
    return field_header(number, len(payload)) + payload


def field_header(number: int, length: int) -> bytes:
    """The tag and length of a length-delimited field whose `length` bytes follow (joined by the caller)."""
    return varint(number << 3 | _LENGTH_DELIMITED) + varint(length)


def repeated_records(number: int, payloads: Iterable[bytes]) -> bytes:
    """A repeated message field whose elements are already encoded, in order."""
    tag = varint(number << 3 | _LENGTH_DELIMITED)
    return b"".join(tag + varint(len(payload)) + payload for payload in payloads)


# Bytes (or characters) one encoding or parsing call handles at most when a large
# message is taken apart: about a millisecond, in which the call holds the GIL.
PIECE_BYTES = 1 << 20
# A message with more top-level fields than this per PIECE_BYTES is parsed whole
# rather than walked field by field in Python.
_MAX_FIELDS_WALKED = 20_000


def _read_varint(data: bytes, at: int) -> tuple[int, int]:
    value, shift = 0, 0
    while True:
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, at
        shift += 7
        if shift > 63:
            raise ValueError("varint too long")


def _field_end(data: bytes, at: int) -> int:
    """Where the field record starting at `at` ends; ValueError when it cannot be skipped here."""
    key, at = _read_varint(data, at)
    wire_type = key & 7
    if wire_type == 0:
        return _read_varint(data, at)[1]
    if wire_type == 1:
        return at + 8
    if wire_type == 5:
        return at + 4
    if wire_type == _LENGTH_DELIMITED:
        length, at = _read_varint(data, at)
        return at + length
    raise ValueError("group or unknown wire type")  # left to the parser


def message_pieces(data: bytes) -> list[bytes]:
    """`data` (an encoded message) cut between top-level fields into pieces of about PIECE_BYTES.

    Parsing the pieces one after another into one message (MergeFromString) gives
    the message parsing `data` at once gives: protobuf defines parsing a
    concatenation as merging its parts. What cannot be walked (a malformed
    record, too many tiny fields) is left in the last piece, for the parser to judge.
    """
    pieces: list[bytes] = []
    start = at = walked = 0
    try:
        while at < len(data) and walked < _MAX_FIELDS_WALKED * (len(pieces) + 1):
            at = _field_end(data, at)
            walked += 1
            if at - start >= PIECE_BYTES and at <= len(data):
                pieces.append(data[start:at])
                start = at
    except (ValueError, IndexError):
        pass
    if start < len(data):
        pieces.append(data[start:])
    return pieces
