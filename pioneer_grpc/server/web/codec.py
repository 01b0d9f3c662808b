"""Protobuf JSON on one line for Connect: the runtime's google.protobuf JSON codec indents by two.

The Connect protocol leaves whitespace to the server; an indented PrepareTurn
answer is about a third spaces and newlines. Answers here are compact; `| jq`
formats them for reading. Decoding is the runtime's (unknown fields ignored), for a
JSON object only: a request that is an array, a string or a number is refused, where
the runtime would read it as an empty request.
"""

from __future__ import annotations

import json
import re
from typing import Any

from connectrpc.codec import Codec
from connectrpc.compat import google_protobuf_binary_codec, google_protobuf_json_codec
from google.protobuf.message import Message

from pioneer_grpc.server.web.json_dict import message_dict

_JSON = google_protobuf_json_codec()
_OBJECT = re.compile(rb"[ \t\r\n]*\{")


def check_object(data: bytes | bytearray) -> None:
    """Raises ValueError unless `data` is (or starts as) a JSON object, as every request must be."""
    if _OBJECT.match(data) is None:
        raise ValueError("a request in JSON must be an object ({...})")


class CompactJSONCodec(Codec[Message, Any]):
    def name(self) -> str:
        return _JSON.name()

    def encode(self, message: Message) -> bytes:
        as_dict = message_dict(message)
        return json.dumps(as_dict, ensure_ascii=False, separators=(",", ":")).encode("utf-8")

    def decode(self, data: bytes | bytearray, message_class: type[Any]) -> Any:
        check_object(data)
        return _JSON.decode(data, message_class)


CODECS: list[Codec[Any, Any]] = [google_protobuf_binary_codec(), CompactJSONCodec()]
