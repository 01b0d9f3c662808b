"""Headers and bytes a hostile client sends: no header value in a log line, no credential ambiguity,
no traceback per call from any kind of handler."""

from __future__ import annotations

import logging
import random

import grpc
import pytest

from pioneer_grpc.server.reflection import V1, V1ALPHA
from tests.chaos import raw_h2
from tests.support import eventually

TOKEN = "tok-hdr-58e2"
SECRET = b"SECRETVALUE-9d1c"


def _lines(caplog: pytest.LogCaptureFixture) -> str:
    return "\n".join(f"{r.levelname} {r.name} {r.getMessage()} {r.exc_text or ''}" for r in caplog.records)


async def test_an_authorization_value_that_is_not_utf8_is_never_logged(server_factory, caplog):
    server = await server_factory(token=TOKEN)
    caplog.set_level(logging.DEBUG)
    for header in (b"authorization", b"x-custom"):
        frames = await raw_h2.call(
            "127.0.0.1", server.running.port, "/pioneer.v1.EchoService/Echo", [(header, SECRET + b"\xff\xfe")]
        )
        # The stream ended with trailers (a status), not a reset.
        assert (raw_h2.HEADERS, raw_h2.END_STREAM | raw_h2.END_HEADERS) in frames
    access = "rpc /pioneer.v1.EchoService/Echo code=UNAUTHENTICATED"
    # The access line is written once the status has left.
    await eventually(lambda: _lines(caplog).count(access) == 2, what="two access lines")
    logged = _lines(caplog)
    assert "SECRETVALUE" not in logged
    assert "Traceback" not in logged
    assert logged.count("a metadata value is not valid UTF-8 (value not logged)") == 2


@pytest.mark.parametrize("valid_first", [True, False])
async def test_two_authorization_headers_are_refused_whatever_their_order(server_factory, valid_first):
    server = await server_factory(token=TOKEN)
    echo = server.channel().unary_unary("/pioneer.v1.EchoService/Echo")
    pair = [("authorization", f"Bearer {TOKEN}"), ("authorization", "Bearer wrong")]
    metadata = tuple(pair if valid_first else reversed(pair))
    with pytest.raises(grpc.aio.AioRpcError) as raised:
        await echo(b"", metadata=metadata, timeout=10)
    assert raised.value.code() == grpc.StatusCode.UNAUTHENTICATED
    assert "more than one authorization header" in (raised.value.details() or "")
    assert await echo(b"", metadata=server.metadata(), timeout=10) == b""


@pytest.mark.parametrize("service", [V1, V1ALPHA])
async def test_random_bytes_to_reflection_get_a_status_and_no_traceback(server, caplog, service):
    caplog.set_level(logging.DEBUG)
    rng = random.Random(26)
    reflect = server.channel().stream_stream(f"/{service}/ServerReflectionInfo")
    codes: dict[grpc.StatusCode, int] = {}
    for _ in range(100):
        call = reflect()
        await call.write(rng.randbytes(rng.randrange(1, 200)))
        await call.done_writing()
        try:
            async for _answer in call:
                pass
        except grpc.aio.AioRpcError:
            pass
        code = await call.code()
        codes[code] = codes.get(code, 0) + 1
    assert set(codes) <= {grpc.StatusCode.OK, grpc.StatusCode.INVALID_ARGUMENT}, codes
    assert codes.get(grpc.StatusCode.INVALID_ARGUMENT, 0) > 50, codes
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert "Traceback" not in _lines(caplog)
