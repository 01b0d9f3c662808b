"""The files under examples/ work: the CLI compiles and renders the sample inputs, the TOML config loads."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from pioneer_grpc.config import load_config
from pioneer_grpc.providers.specs import BY_NAME

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pioneer_grpc.cli", *args], capture_output=True, text=True, timeout=120
    )


def test_compile_runs_the_sample_input(tmp_path):
    done = cli("compile", "--home", str(tmp_path), "--json", str(EXAMPLES / "compile_input.json"))
    assert done.returncode == 0, done.stderr
    payload = json.loads(done.stdout)
    assert "Date: 2026-11-30" in payload["dynamicSystemText"]
    assert "Open files" in payload["dynamicSystemText"]


@pytest.mark.parametrize("provider", list(BY_NAME))
def test_render_runs_the_sample_chat_request_for_every_provider(provider):
    done = cli("render", "--provider", provider, str(EXAMPLES / "chat_request.json"))
    assert done.returncode == 0, done.stderr
    body = json.loads(done.stdout)
    assert "list_files" in json.dumps(body)


def test_the_sample_toml_config_loads():
    config = load_config({}, environ={}, config_file=EXAMPLES / "pioneer.toml")
    assert config.listen == "127.0.0.1:50051"
    assert config.max_message_bytes == 16 * 1024 * 1024
    assert config.home == Path("~/.pioneer").expanduser()
