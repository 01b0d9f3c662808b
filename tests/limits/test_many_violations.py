"""A request with thousands of bad fields gets an INVALID_ARGUMENT the client can read.

The violations travel in a trailer that clients refuse past 16 KiB: before, 2,000
bad messages made an 18 MB trailer and the client saw RESOURCE_EXHAUSTED instead.
"""

from __future__ import annotations

import grpc

from pioneer_grpc.errors import CARRIED_CHARS, CARRIED_VIOLATIONS, FieldViolation, InvalidArgument
from pioneer_grpc.v1 import chat_pb2, provider_service_pb2
from tests.support import failure


def test_the_message_counts_all_and_the_details_carry_the_first_few() -> None:
    violations = [FieldViolation(f"messages[{i}].content", "message is empty") for i in range(1_000)]
    error = InvalidArgument.of(violations)
    assert error.message.endswith("(and 997 more)")
    assert error.violations == violations[:CARRIED_VIOLATIONS]
    long = [FieldViolation(f"f{i}", "x" * 1_000) for i in range(10)]
    carried = InvalidArgument.of(long).violations
    assert 1 <= len(carried) < 10
    assert sum(len(v.field) + len(v.description) for v in carried) <= CARRIED_CHARS


async def test_two_thousand_bad_messages_are_one_readable_invalid_argument(server) -> None:
    empty = chat_pb2.ChatMessage(role=chat_pb2.CHAT_ROLE_USER)
    request = provider_service_pb2.RenderChatRequestRequest(
        provider=provider_service_pb2.PROVIDER_OPENAI_CHAT_COMPLETIONS,
        chat_request=chat_pb2.ChatRequest(model="m", messages=[empty] * 2_000),
    )
    client = await server.client()  # its channel keeps gRPC's default limit on received metadata
    failed = await failure(client.render_chat_request(request))
    assert failed.code == grpc.StatusCode.INVALID_ARGUMENT
    assert "(and 1997 more)" in failed.message
    assert failed.violations[0] == ("chat_request.messages[0].content", "message is empty")
    assert len(failed.violations) == CARRIED_VIOLATIONS
