"""`pioneer-grpc serve` with the persona flags, as an operator starts it."""

from __future__ import annotations

import os
import signal
import subprocess

import grpc

from pioneer_grpc.v1 import prompt_compiler_service_pb2 as pb
from pioneer_grpc.v1 import prompt_compiler_service_pb2_grpc as pb_grpc
from pioneer_grpc.v1 import prompt_pb2
from tests.server.test_console_script import SCRIPT, free_port, wait_serving

SCOUT = "You are Scout, a browser agent that files expense reports."


def test_serve_compiles_with_the_persona_file_and_home_labels(tmp_path) -> None:
    persona = tmp_path / "persona.md"
    persona.write_text(f"{SCOUT}\nKeep receipts.\n", encoding="utf-8")
    extra = tmp_path / "shared"
    extra.mkdir()
    (extra / "SOUL.md").write_text("Shared soul.", encoding="utf-8")
    address = f"127.0.0.1:{free_port()}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIONEER_")}
    argv = [
        str(SCRIPT),
        "serve",
        "--listen",
        address,
        "--home",
        str(tmp_path / "home"),
        "--persona-file",
        str(persona),
        "--home-label",
        "/srv/agent",
        "--extra-home",
        str(extra),
        "--extra-home-label",
        "~/shared",
        # The team's persona, and its own SOUL.md read too (a persona alone leaves them unread).
        "--identity-files",
        "read",
        "--seed-bootstrap-files",
    ]
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        wait_serving(address, proc)
        with grpc.insecure_channel(address) as channel:
            stub = pb_grpc.PromptCompilerServiceStub(channel)
            home = stub.CompilePrompt(pb.CompilePromptRequest(), timeout=30).payload
            shared = stub.CompilePrompt(
                pb.CompilePromptRequest(input=prompt_pb2.PromptCompileInput(workspace_root=str(extra))),
                timeout=30,
            ).payload
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)
    assert home.stable_system_text.startswith(f"## Identity\n{SCOUT}\nKeep receipts.\n\n## Safety\n")
    assert "### SOUL.md (/srv/agent/SOUL.md)" in home.stable_system_text
    assert "### SOUL.md (~/shared/SOUL.md)\nShared soul." in shared.stable_system_text


def test_serve_refuses_an_unreadable_persona_file(tmp_path) -> None:
    missing = tmp_path / "missing.md"
    proc = subprocess.run(
        [str(SCRIPT), "serve", "--home", str(tmp_path / "home"), "--persona-file", str(missing)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    assert f"configuration error: persona file {missing}: No such file or directory" in proc.stderr
