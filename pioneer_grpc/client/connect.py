"""Connection settings shared by the sync and async clients."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import grpc

# The server accepts and sends messages up to 16 MiB by default (max_message_bytes);
# grpc's own client default is 4 MiB, which fails on large appends and loads.
DEFAULT_MAX_MESSAGE_BYTES = 16 * 1024 * 1024
DEFAULT_ADDRESS = "127.0.0.1:50051"


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
