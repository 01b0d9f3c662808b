"""Connection settings shared by the sync and async clients.

An address is HOST[:PORT]: gRPC itself reads a bare "localhost" as port 443 and
"http://host:port" as a malformed name, so a missing port here is the server's
default (50051) and an http:// prefix is taken off. gRPC's own target names
(unix:/path, dns:///host:port ...) pass as written.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import grpc

# The server accepts and sends messages up to 16 MiB by default (max_message_bytes);
# grpc's own client default is 4 MiB, which fails on large appends and loads.
DEFAULT_MAX_MESSAGE_BYTES = 16 * 1024 * 1024
DEFAULT_PORT = 50051
DEFAULT_ADDRESS = f"127.0.0.1:{DEFAULT_PORT}"
GRPC_SCHEME = re.compile(r"^(dns|unix|unix-abstract|ipv4|ipv6|vsock):")


def normalize_address(text: str) -> str:
    """HOST:PORT for `text` (port 50051 when none is given, http:// taken off); ValueError otherwise."""
    given = text.strip()
    if GRPC_SCHEME.match(given):
        return given  # gRPC's own target syntax (unix:/path, dns:///host:port ...), as written
    if given.startswith("https://"):
        raise ValueError(
            f"{text!r}: https:// is not an address: give HOST:PORT (tls=True for TLS), e.g. {DEFAULT_ADDRESS}"
        )
    if "://" in given:
        scheme = given.split("://", 1)[0]
        if scheme != "http":
            raise ValueError(f"{text!r}: give HOST:PORT, e.g. {DEFAULT_ADDRESS}")
        given = given.split("://", 1)[1]
    given = given.rstrip("/")
    if not given or "/" in given:
        raise ValueError(f"{text!r}: give HOST:PORT, e.g. {DEFAULT_ADDRESS}")
    if given.startswith("["):  # [IPv6] or [IPv6]:PORT
        host, _, rest = given.partition("]")
        port = rest.removeprefix(":") if rest.startswith(":") else ""
        if rest and not rest.startswith(":"):
            raise ValueError(f"{text!r}: give [IPV6]:PORT, e.g. [::1]:{DEFAULT_PORT}")
        host += "]"
    elif given.count(":") > 1:  # a bare IPv6 address: no port can be told apart
        host, port = f"[{given}]", ""
    else:
        host, _, port = given.partition(":")
    if not port:
        port = str(DEFAULT_PORT)
    if not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"{text!r}: the port must be a number from 1 to 65535")
    if host in ("", "[]"):
        raise ValueError(f"{text!r}: give HOST:PORT, e.g. {DEFAULT_ADDRESS}")
    return f"{host}:{port}"


@dataclass(frozen=True)
class ConnectOptions:
    """Where and how to connect.

    `timeout` is the deadline of each unary call in seconds (None: no deadline;
    streams never get one by default). `connect_timeout` bounds the wait for the
    server at connect time, so a wrong address fails at once with a clear message.
    """

    address: str = DEFAULT_ADDRESS
    token: str | None = None
    tls: bool = False
    root_certificates: bytes | None = None
    timeout: float | None = 30.0
    connect_timeout: float | None = 5.0
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES

    def __post_init__(self) -> None:
        object.__setattr__(self, "address", normalize_address(self.address))

    def channel_options(self) -> list[tuple[str, Any]]:
        return [
            ("grpc.max_receive_message_length", self.max_message_bytes),
            ("grpc.max_send_message_length", self.max_message_bytes),
        ]

    def credentials(self) -> grpc.ChannelCredentials | None:
        if not self.tls and self.root_certificates is None:
            return None
        return grpc.ssl_channel_credentials(root_certificates=self.root_certificates)

    def call_metadata(self, extra: Any = ()) -> list[tuple[str, str]]:
        metadata = list(extra or ())
        if self.token:
            metadata.append(("authorization", f"Bearer {self.token}"))
        return metadata

    def unreachable(self) -> str:
        scheme = "TLS" if self.credentials() is not None else "plaintext"
        return (
            f"cannot reach a pioneer-grpc server at {self.address} ({scheme}) within "
            f"{self.connect_timeout:g} s: is it running (`make run`), and is the address right?"
        )
