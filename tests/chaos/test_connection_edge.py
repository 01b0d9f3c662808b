"""Connections a client opens and leaves: the descriptor limit, the connection cap, the metrics port."""

from __future__ import annotations

import asyncio
import logging
import resource

import grpc
import httpx
import pytest

from pioneer_grpc import reasons
from pioneer_grpc.server import app
from pioneer_grpc.telemetry import metrics_http
from tests.chaos.conftest import health_status
from tests.support import decoded, eventually


async def test_the_descriptor_soft_limit_is_raised_to_the_hard_limit(server_factory):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(1024, hard), hard))
    try:
        await server_factory()
        assert resource.getrlimit(resource.RLIMIT_NOFILE)[0] == (
            hard if hard != resource.RLIM_INFINITY else 1 << 20
        )
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


async def _echo(channel: grpc.aio.Channel) -> bytes:
    return await channel.unary_unary("/pioneer.v1.EchoService/Echo")(b"", timeout=10)


async def test_beyond_the_cap_new_connections_get_resource_exhausted(server_factory, caplog):
    caplog.set_level(logging.WARNING)
    server = await server_factory(max_connections=2, metrics_listen="127.0.0.1:0")
    first, second, third = (
        grpc.aio.insecure_channel(server.address, options=[("grpc.use_local_subchannel_pool", 1)])
        for _ in range(3)
    )
    try:
        assert await _echo(first) == b""
        assert await _echo(second) == b""
        with pytest.raises(grpc.aio.AioRpcError) as raised:
            await _echo(third)
        assert raised.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert decoded(raised.value).reason == reasons.TOO_MANY_CONNECTIONS
        # Health still answers on it; the connections already served are still served.
        assert await health_status(third) == 1
        assert await _echo(first) == b""
        assert any("refusing RPCs on new connections" in r.getMessage() for r in caplog.records)
        # Once one closes, the new connection is served.
        await first.close()

        async def served() -> bool:
            try:
                assert await _echo(third) == b""
            except grpc.aio.AioRpcError as error:
                assert error.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
                return False
            return True

        await eventually(served, step=0.05, what="the new connection served once another closed")
    finally:
        for channel in (first, second, third):
            await channel.close()


async def test_idle_connections_to_the_metrics_port_are_bounded_and_closed(
    server_factory, monkeypatch, caplog
):
    monkeypatch.setattr(metrics_http._QuietHandler, "timeout", 0.5)
    monkeypatch.setattr(metrics_http._BoundedServer, "max_connections", 4)
    caplog.set_level(logging.WARNING)
    server = await server_factory(metrics_listen="127.0.0.1:0")
    host, _, port = server.running.metrics_address.rpartition(":")
    idle = [await asyncio.open_connection(host, int(port)) for _ in range(6)]
    try:
        async with asyncio.timeout(20):
            # Every idle connection ends: two at once (over the cap), four after the idle timeout.
            ends = await asyncio.gather(*(reader.read() for reader, _ in idle))
        assert ends == [b""] * 6
        assert any("refusing more" in r.getMessage() for r in caplog.records)
        async with httpx.AsyncClient() as client:
            assert (await client.get(f"http://{server.running.metrics_address}/metrics")).status_code == 200
    finally:
        for _, writer in idle:
            writer.close()


async def _closed_at(reader: asyncio.StreamReader, within: float) -> bool:
    """Whether the server closes the connection within `within` s (what it sends first is read past)."""
    try:
        async with asyncio.timeout(within):
            while await reader.read(65536):
                pass
    except TimeoutError:
        return False
    except ConnectionError:
        pass
    return True


async def test_past_the_cap_and_its_overflow_new_grpc_connections_are_closed_at_accept(server_factory):
    # max_connections 2: RPCs on a third get RESOURCE_EXHAUSTED (above); 32 more are accepted to be
    # told so; past those, grpc closes new connections at once, so they hold no descriptor.
    server = await server_factory(max_connections=2, http_header_timeout_seconds=60)
    accepted = 2 + app.CONNECTION_OVERFLOW
    idle = [await asyncio.open_connection("127.0.0.1", server.running.port) for _ in range(accepted + 6)]
    try:
        # The 6 past the overflow are closed at once; the others are held (until the 60 s handshake bound).
        closed = await asyncio.gather(*(_closed_at(reader, 2) for reader, _ in idle))
        assert closed.count(True) == 6
    finally:
        for _, writer in idle:
            writer.close()


async def test_a_grpc_connection_that_never_finishes_its_handshake_is_closed(server_factory):
    """No HTTP/2 preface (or TLS handshake) within the header timeout: the connection is let go."""
    server = await server_factory(http_header_timeout_seconds=1)
    reader, writer = await asyncio.open_connection("127.0.0.1", server.running.port)
    try:
        assert await _closed_at(reader, 15)
    finally:
        writer.close()
