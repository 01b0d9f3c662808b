"""A folder of the workspace swapped with a symlink to an outside folder, over and over, while
compiling through the real RPC: no compile may show the outside files.

Before, the path was checked (resolved inside the home) and opened later by name, so
an exchange between the two let 10,243 of 30,672 compiles read the outside SOUL.md.
Now each file is opened component by component without following symlinks.
"""

from __future__ import annotations

import asyncio
import ctypes
import os
import threading
import time
from pathlib import Path

import grpc

from pioneer_grpc.v1 import prompt_compiler_service_pb2 as pb
from pioneer_grpc.v1 import prompt_compiler_service_pb2_grpc as pb_grpc
from pioneer_grpc.v1 import prompt_pb2
from tests.support import unavailable_here

RACE_SECONDS = 20
MAX_COMPILES = 50_000
SECRET = "OUTSIDE-SECRET"
AT_FDCWD = -100
RENAME_EXCHANGE = 2

_libc = ctypes.CDLL(None, use_errno=True)


def _exchange(a: Path, b: Path) -> None:
    if _libc.renameat2(AT_FDCWD, os.fsencode(a), AT_FDCWD, os.fsencode(b), RENAME_EXCHANGE) != 0:
        error = ctypes.get_errno()
        raise OSError(error, os.strerror(error))


def _swapper(a: Path, b: Path, stop: threading.Event, swaps: list[int]) -> None:
    while not stop.is_set():
        _exchange(a, b)
        swaps[0] += 1


def _layout(home: Path, outside: Path) -> None:
    (home / "ws" / "sub").mkdir(parents=True)
    (home / "ws" / "SOUL.md").write_text("inside soul\n")
    (home / "ws" / "sub" / "AGENTS.md").write_text("inside agents\n")
    (outside / "sub").mkdir(parents=True)
    (outside / "SOUL.md").write_text(f"{SECRET} soul\n")
    (outside / "sub" / "AGENTS.md").write_text(f"{SECRET} agents\n")
    (home / "link").symlink_to(outside)


async def test_a_swapped_folder_never_redirects_a_read_outside_the_home(server, tmp_path: Path) -> None:
    home = Path(server.home)
    _layout(home, tmp_path / "outside")
    try:
        _exchange(home / "ws", home / "link")
        _exchange(home / "ws", home / "link")
    except OSError as exc:  # pragma: no cover - a filesystem without renameat2
        unavailable_here(f"renameat2(RENAME_EXCHANGE) unavailable: {exc}")
    stub = pb_grpc.PromptCompilerServiceStub(server.channel())
    request = pb.CompilePromptRequest(
        input=prompt_pb2.PromptCompileInput(
            workspace_root="ws", agents_md=prompt_pb2.AgentsMdSource(thread_folder="sub")
        )
    )
    outcomes = {"inside": 0, "refused": 0, "leaked": 0, "other": 0}
    stop = threading.Event()
    swaps = [0]
    swapper = threading.Thread(target=_swapper, args=(home / "ws", home / "link", stop, swaps))
    deadline = time.monotonic() + RACE_SECONDS
    compiles = 0

    async def caller() -> None:
        nonlocal compiles
        while time.monotonic() < deadline and compiles < MAX_COMPILES:
            compiles += 1
            try:
                response = await stub.CompilePrompt(request, metadata=server.metadata(), timeout=10)
            except grpc.aio.AioRpcError as error:
                # Resolved outside at the check: refused before any read.
                outcomes["refused" if error.code() == grpc.StatusCode.PERMISSION_DENIED else "other"] += 1
                continue
            text = response.payload.full_system_text
            outcomes["leaked" if SECRET in text else "inside" if "inside soul" in text else "other"] += 1

    swapper.start()
    try:
        await asyncio.gather(*(caller() for _ in range(4)))
    finally:
        stop.set()
        swapper.join()
    print(f"swap race: {compiles} compiles, {swaps[0]} swaps, {outcomes}")
    assert outcomes["leaked"] == 0, outcomes
    assert swaps[0] > 0
    assert outcomes["inside"] > 0
