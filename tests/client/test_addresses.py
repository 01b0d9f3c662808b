"""The client reads an address as the CLI does: HOST without a port is port 50051, http:// is taken off."""

from __future__ import annotations

import pytest

from pioneer_grpc.client import AsyncClient, ConnectOptions


@pytest.mark.parametrize(
    ("given", "used"),
    [
        ("localhost", "localhost:50051"),
        ("10.0.0.7:7000", "10.0.0.7:7000"),
        ("http://localhost:7000/", "localhost:7000"),
        ("[::1]", "[::1]:50051"),
        ("unix:/run/pioneer.sock", "unix:/run/pioneer.sock"),
        ("dns:///example.org:443", "dns:///example.org:443"),
    ],
)
def test_an_address_is_host_and_port(given: str, used: str) -> None:
    assert ConnectOptions(address=given).address == used


def test_https_is_refused_with_what_to_give_instead() -> None:
    with pytest.raises(ValueError, match=r"https:// is not an address: give HOST:PORT \(tls=True for TLS\)"):
        ConnectOptions(address="https://example.org")


async def test_an_http_url_of_a_live_server_connects(server) -> None:
    async with await AsyncClient.connect(f"http://{server.address}") as client:
        assert client.options.address == server.address
        assert (await client.echo(payload=b"x")).payload == b"x"
