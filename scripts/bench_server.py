"""The server the benchmarks measure: a `pioneer-grpc serve` subprocess on a loopback port."""

from __future__ import annotations

import asyncio
import signal
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

SCRIPT = Path(sys.executable).parent / "pioneer-grpc"


def serve_args(home: Path, *extra: str) -> list[str]:
    """The command line: an ephemeral port, the given home, warnings only, a short grace."""
    return [
        str(SCRIPT),
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--home",
        str(home),
        "--log-level",
        "WARNING",
        "--grace-seconds",
        "0.5",
        *extra,
    ]


def address_of(line: str) -> str:
    """The address from the server's start-up line ("... serving on ADDR", with --workers followed by
    their count), or why it did not start."""
    if "serving on " not in line:
        raise RuntimeError(f"server did not start: {line!r}")
    return line.rsplit("serving on ", 1)[1].split()[0]


@asynccontextmanager
async def served(
    home: Path, *extra: str, env: dict[str, str] | None = None
) -> AsyncIterator[tuple[str, int]]:
    """The server started (with `env` as its environment, when given); yields its address and pid,
    and stops it (SIGTERM) after."""
    proc = await asyncio.create_subprocess_exec(
        *serve_args(home, *extra), stdout=asyncio.subprocess.PIPE, env=env
    )
    try:
        assert proc.stdout is not None
        line = (await asyncio.wait_for(proc.stdout.readline(), 60)).decode()
        yield address_of(line), proc.pid
    finally:
        if proc.returncode is None:
            proc.send_signal(signal.SIGTERM)
            await asyncio.wait_for(proc.wait(), 30)
