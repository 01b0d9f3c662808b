"""A large message parsed a piece at a time is the message parsed at once; bad bytes stay bad."""

from __future__ import annotations

import grpc
import pytest
from google.protobuf.message import DecodeError

from pioneer_grpc import wire
from pioneer_grpc.v1 import chat_pb2, history_pb2, history_service_pb2, provider_service_pb2


def _merged(cls: type, data: bytes) -> object:
    message = cls()
    for piece in wire.message_pieces(data):
        message.MergeFromString(piece)
    return message


def test_pieces_merge_into_the_whole_message() -> None:
    entries = [
        history_pb2.ConversationEntry(entry_id=f"e{i}", turn_id="u", content="日本é" * 100_000)
        for i in range(30)
    ]
    request = history_service_pb2.AppendEntriesRequest(thread_id="t", entries=entries, counts_only=True)
    data = request.SerializeToString()
    pieces = wire.message_pieces(data)
    assert len(pieces) > 5
    assert b"".join(pieces) == data
    assert max(len(piece) for piece in pieces) < 2 * wire.PIECE_BYTES
    assert _merged(history_service_pb2.AppendEntriesRequest, data) == request


def test_singular_fields_merge_as_a_whole_parse_does() -> None:
    # The same singular message field twice: parsing merges the two, and so do the pieces.
    first = provider_service_pb2.RenderChatRequestRequest(
        chat_request=chat_pb2.ChatRequest(
            model="a", messages=[chat_pb2.ChatMessage(content="x" * wire.PIECE_BYTES)]
        )
    ).SerializeToString()
    second = provider_service_pb2.RenderChatRequestRequest(
        chat_request=chat_pb2.ChatRequest(model="b", temperature=0.5)
    ).SerializeToString()
    data = first + second
    assert len(wire.message_pieces(data)) == 2
    whole = provider_service_pb2.RenderChatRequestRequest.FromString(data)
    assert _merged(provider_service_pb2.RenderChatRequestRequest, data) == whole
    assert whole.chat_request.model == "b"


@pytest.mark.parametrize("tail", [b"\xff", b"\x0a\xff\xff\xff\x0f", b"\x0b", b"\x12\x05ab"])
def test_bytes_that_do_not_walk_are_left_to_the_parser(tail: bytes) -> None:
    good = history_service_pb2.AppendEntriesRequest(
        thread_id="t", entries=[history_pb2.ConversationEntry(content="x" * wire.PIECE_BYTES)]
    ).SerializeToString()
    data = good + tail
    assert b"".join(wire.message_pieces(data)) == data
    with pytest.raises(DecodeError):
        history_service_pb2.AppendEntriesRequest.FromString(data)
    with pytest.raises(DecodeError):
        _merged(history_service_pb2.AppendEntriesRequest, data)


async def test_large_undecodable_request_is_invalid_argument(server) -> None:  # type: ignore[no-untyped-def]
    big = 64 * 1024 * 1024
    channel = grpc.aio.insecure_channel(
        server.address,
        options=[("grpc.max_receive_message_length", big), ("grpc.max_send_message_length", big)],
    )
    good = history_service_pb2.AppendEntriesRequest(
        thread_id="t", entries=[history_pb2.ConversationEntry(content="x" * wire.PIECE_BYTES)] * 3
    ).SerializeToString()
    try:
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await channel.unary_unary("/pioneer.v1.HistoryService/AppendEntries")(good + b"\x0a\xff\xff")
    finally:
        await channel.close()
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "not a valid request" in (caught.value.details() or "")
