"""Random bytes to every method: INVALID_ARGUMENT when they do not decode, never UNKNOWN or INTERNAL,
and nothing but one access line per call in the log (no traceback)."""

from __future__ import annotations

import logging
import random

import grpc
from google.protobuf import message_factory
from google.protobuf.message import DecodeError
from grpc_health.v1 import health_pb2

from pioneer_grpc.server.app import SERVICES
from pioneer_grpc.v1 import (
    echo_service_pb2,
    history_service_pb2,
    manifest_service_pb2,
    prompt_compiler_service_pb2,
    provider_service_pb2,
    turn_service_pb2,
)

PER_METHOD = 25
FILES = [
    echo_service_pb2,
    history_service_pb2,
    manifest_service_pb2,
    prompt_compiler_service_pb2,
    provider_service_pb2,
    turn_service_pb2,
    health_pb2,
]


def _methods():
    """(path, request class, server streaming) of every method the server registers."""
    names = {name for name, _, _ in SERVICES} | {"grpc.health.v1.Health"}
    for module in FILES:
        for service in module.DESCRIPTOR.services_by_name.values():
            if service.full_name not in names:
                continue
            for method in service.methods:
                request = message_factory.GetMessageClass(method.input_type)
                yield f"/{service.full_name}/{method.name}", request, method.server_streaming


def _payloads(rng: random.Random) -> list[bytes]:
    fixed = [
        b"\xff",
        b"\x0a\xff\xff\xff\xff\x0f",
        b"\x0a\x02\xc3\x28",
        b"\x08" * 7,
        b"\x12\x80\x80\x80\x80\x10",
    ]
    return fixed + [rng.randbytes(rng.randint(1, 300)) for _ in range(PER_METHOD - len(fixed))]


def _decodes(request_class, data: bytes) -> bool:
    try:
        request_class.FromString(data)
    except DecodeError:
        return False
    return True


async def _code(channel, path: str, streaming: bool, data: bytes) -> grpc.StatusCode:
    try:
        if streaming:
            call = channel.unary_stream(path)(data, timeout=5)
            # A watch that decodes would stream forever: its first answer is enough.
            async for _ in call:
                call.cancel()
                break
            return grpc.StatusCode.OK
        await channel.unary_unary(path)(data, timeout=10)
        return grpc.StatusCode.OK
    except grpc.aio.AioRpcError as error:
        return error.code()


async def test_random_bytes_to_every_method(server, caplog):
    caplog.set_level(logging.INFO)
    rng = random.Random(11)
    channel = server.channel()
    methods = list(_methods())
    assert len(methods) >= 18
    tried = rejected = 0
    for path, request_class, streaming in methods:
        for data in _payloads(rng):
            code = await _code(channel, path, streaming, data)
            tried += 1
            assert code not in (grpc.StatusCode.UNKNOWN, grpc.StatusCode.INTERNAL), (path, data, code)
            if not _decodes(request_class, data):
                assert code == grpc.StatusCode.INVALID_ARGUMENT, (path, data, code)
                rejected += 1
    assert rejected > tried // 2
    assert "Traceback" not in caplog.text
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], caplog.text[-2000:]
