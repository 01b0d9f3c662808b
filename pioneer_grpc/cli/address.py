"""The `--addr` of the commands that call a server: HOST[:PORT], the port 50051 when none is given.

gRPC reads a bare "localhost" as a DNS name on port 443, and "http://host:port" as a
malformed name; here a missing port is the server's default and a URL scheme is
taken off (http://) or refused (https://: these commands speak plaintext gRPC).
"""

from __future__ import annotations

import argparse

DEFAULT_PORT = 50051
DEFAULT_ADDRESS = f"127.0.0.1:{DEFAULT_PORT}"


def server_address(text: str) -> str:
    """HOST:PORT for `text`; raises argparse.ArgumentTypeError with a one-line reason."""
    given = text.strip()
    if given.startswith("https://"):
        raise argparse.ArgumentTypeError(
            f"{text!r}: these commands speak plaintext gRPC, not TLS; give HOST:PORT, e.g. {DEFAULT_ADDRESS}"
        )
    if "://" in given:
        scheme = given.split("://", 1)[0]
        if scheme != "http":
            raise argparse.ArgumentTypeError(f"{text!r}: give HOST:PORT, e.g. {DEFAULT_ADDRESS}")
        given = given.split("://", 1)[1]
    given = given.rstrip("/")
    if not given or "/" in given:
        raise argparse.ArgumentTypeError(f"{text!r}: give HOST:PORT, e.g. {DEFAULT_ADDRESS}")
    if given.startswith("["):  # [IPv6] or [IPv6]:PORT
        host, _, rest = given.partition("]")
        port = rest.removeprefix(":") if rest.startswith(":") else ""
        if rest and not rest.startswith(":"):
            raise argparse.ArgumentTypeError(f"{text!r}: give [IPV6]:PORT, e.g. [::1]:{DEFAULT_PORT}")
        host += "]"
    elif given.count(":") > 1:  # a bare IPv6 address: no port can be told apart
        host, port = f"[{given}]", ""
    else:
        host, _, port = given.partition(":")
    if not port:
        port = str(DEFAULT_PORT)
    if not port.isdigit() or not 0 < int(port) < 65536:
        raise argparse.ArgumentTypeError(f"{text!r}: the port must be a number from 1 to 65535")
    if host in ("", "[]"):
        raise argparse.ArgumentTypeError(f"{text!r}: give HOST:PORT, e.g. {DEFAULT_ADDRESS}")
    return f"{host}:{port}"


def add_address_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--addr",
        default=DEFAULT_ADDRESS,
        type=server_address,
        help=f"server HOST[:PORT] (default {DEFAULT_ADDRESS}; the port defaults to {DEFAULT_PORT})",
    )
