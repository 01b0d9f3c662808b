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


def _varint(value: int) -> bytes:
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def field_record(number: int, payload: bytes) -> bytes:
    """One length-delimited field (a message, bytes or string) with its tag."""
    return _varint(number << 3 | _LENGTH_DELIMITED) + _varint(len(payload)) + payload


def repeated_records(number: int, payloads: Iterable[bytes]) -> bytes:
    """A repeated message field whose elements are already encoded, in order."""
    tag = _varint(number << 3 | _LENGTH_DELIMITED)
    return b"".join(tag + _varint(len(payload)) + payload for payload in payloads)
