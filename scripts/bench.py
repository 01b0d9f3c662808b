"""`make bench`: the figures the issues ask for, each a ratio measured in one run.

Every server is a `pioneer-grpc serve` subprocess on loopback; the Go load
generator (clients/go/bin/pioneer-load) drives RPCs so the client is not the
bottleneck. Each real RPC is compared with EchoService.Echo carrying a payload
of the same request size, on the same server, at the same concurrency.

    CompilePrompt (full profile, every section) vs echo, at 1 and 16 in flight
    PrepareTurn on a 200-entry thread with a full-profile compile vs echo
    LoadConversationHistory of 200 entries (~100k tokens) vs re-tokenizing them
    Manifest event delivery, 100 observers: one server (SQLite); two replicas (PostgreSQL)

PIONEER_BENCH_SECONDS sets the measuring time of each load run (default 5).
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench_events import bench_delivery, scratch_database, serve
from bench_history import bench_load_history
from bench_inputs import full_compile_request, prepare_home
from google.protobuf import json_format

ROOT = Path(__file__).resolve().parent.parent
LOADER = ROOT / "clients" / "go" / "bin" / "pioneer-load"
SECONDS = os.environ.get("PIONEER_BENCH_SECONDS", "5")


def load(address: str, rpc: str, concurrency: int, **flags: Any) -> dict[str, Any]:
    args = [str(LOADER), "-addr", address, "-rpc", rpc, "-concurrency", str(concurrency)]
    args += ["-duration", f"{SECONDS}s"]
    for name, value in flags.items():
        args += [f"-{name.replace('_', '-')}", str(value)]
    out = subprocess.run(args, check=True, capture_output=True, text=True).stdout
    result: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    return result


def against_echo(address: str, rpc: str, concurrency: int, **flags: Any) -> dict[str, Any]:
    real = load(address, rpc, concurrency, **flags)
    echo = load(address, "echo", concurrency, payload_bytes=real["request_bytes"])
    return {
        "rpc": rpc,
        "concurrency": concurrency,
        "request_bytes": real["request_bytes"],
        "rps": real["rps"],
        "echo_rps": echo["rps"],
        "throughput_vs_echo": round(real["rps"] / echo["rps"], 3),
        "p50_ms": real["p50_ms"],
        "p99_ms": real["p99_ms"],
        "echo_p50_ms": echo["p50_ms"],
        "echo_p99_ms": echo["p99_ms"],
        "errors": real["errors"] + echo["errors"],
    }


def start_postgres(cluster: Path) -> str:
    port = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "free_port.py")], check=True, capture_output=True, text=True
    ).stdout.strip()
    return subprocess.run(
        ["bash", str(ROOT / "scripts" / "pg.sh"), "start", str(cluster), port],
        check=True, capture_output=True, text=True,
    ).stdout.strip()


def stop_postgres(cluster: Path) -> None:
    subprocess.run(["bash", str(ROOT / "scripts" / "pg.sh"), "stop", str(cluster)], check=False)


async def main() -> None:
    results: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="pioneer-bench-") as tmp:
        home = Path(tmp) / "home"
        home.mkdir()
        prepare_home(home)
        request_file = Path(tmp) / "compile.json"
        request_file.write_text(json_format.MessageToJson(full_compile_request(home)))
        async with serve("", home) as address:
            for concurrency in (1, 16):
                results.append(
                    await asyncio.to_thread(against_echo, address, "compile", concurrency, input=request_file)
                )
            results.append(await asyncio.to_thread(against_echo, address, "prepare-turn", 16, seed_turns=100))
            results.append({"rpc": "load-history", **await bench_load_history(address, "")})
        results.append({"rpc": "watch-delivery", **await bench_delivery(observers=100)})
        cluster = Path(tempfile.mkdtemp(prefix="pioneer-bench-pg-", dir="/tmp"))
        try:
            admin_url = os.environ.get("PIONEER_BENCH_PG_URL", "")
            admin_url = admin_url or await asyncio.to_thread(start_postgres, cluster)
            async with scratch_database(admin_url) as url:
                replicas = await bench_delivery(observers=100, database_url=url, replicas=2)
                results.append({"rpc": "watch-delivery", **replicas})
        finally:
            await asyncio.to_thread(stop_postgres, cluster)
    for result in results:
        print(json.dumps(result))


if __name__ == "__main__":
    asyncio.run(main())
