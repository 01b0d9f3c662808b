"""The `--addr` of the commands that call a server: HOST[:PORT], the port 50051 when none is given.

The client's rule (client/connect.py): a missing port is the server's default and
http:// is taken off; https:// is refused here, as these commands speak plaintext gRPC.
"""

from __future__ import annotations

import argparse

from pioneer_grpc.client.connect import DEFAULT_ADDRESS, DEFAULT_PORT, normalize_address


def server_address(text: str) -> str:
    """HOST:PORT for `text`; raises argparse.ArgumentTypeError with a one-line reason."""
    if text.strip().startswith("https://"):
        raise argparse.ArgumentTypeError(
            f"{text!r}: these commands speak plaintext gRPC, not TLS; give HOST:PORT, e.g. {DEFAULT_ADDRESS}"
        )
    try:
        return normalize_address(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_address_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--addr",
        default=DEFAULT_ADDRESS,
        type=server_address,
        help=f"server HOST[:PORT] (default {DEFAULT_ADDRESS}; the port defaults to {DEFAULT_PORT})",
    )
