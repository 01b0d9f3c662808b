"""Pioneer's SOUL.md and IDENTITY.md are seeded by `serve`'s first run at its default home, or when an
operator asks (--seed-bootstrap-files); a server started any other way (an API user's, a team's home)
seeds nothing. Seeding never overwrites."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import pytest

from tests.server.test_console_script import SCRIPT, wait_serving
from tests.support import free_port


async def test_a_server_started_from_code_seeds_nothing(server_factory, tmp_path):
    home = tmp_path / "team"
    await server_factory(home=home)
    assert not (home / "SOUL.md").exists()
    assert not (home / "IDENTITY.md").exists()
    assert (home / "pioneer.db").exists()


async def test_asked_to_it_creates_missing_bootstrap_files(server_factory, tmp_path):
    home = tmp_path / "fresh"
    await server_factory(home=home, seed_bootstrap_files=True)
    soul = (home / "SOUL.md").read_text()
    identity = (home / "IDENTITY.md").read_text()
    assert len(soul) > 200
    assert len(identity) > 100
    assert not (home / "USER.md").exists()


async def test_start_leaves_existing_and_empty_files_byte_identical(server_factory, tmp_path):
    home = tmp_path / "custom"
    home.mkdir()
    (home / "SOUL.md").write_bytes(b"my own soul\r\n\xe2\x9c\x93")
    (home / "IDENTITY.md").write_bytes(b"")
    await server_factory(home=home, seed_bootstrap_files=True)
    assert (home / "SOUL.md").read_bytes() == b"my own soul\r\n\xe2\x9c\x93"
    assert (home / "IDENTITY.md").read_bytes() == b""


async def test_restart_does_not_rewrite_seeded_files(server_factory, tmp_path):
    home = tmp_path / "again"
    first = await server_factory(home=home, seed_bootstrap_files=True)
    before = (home / "SOUL.md").stat().st_mtime_ns
    await first.close()
    await server_factory(home=home, seed_bootstrap_files=True)
    assert (home / "SOUL.md").stat().st_mtime_ns == before


def _serve(tmp_path: Path, *flags: str) -> None:
    """`pioneer-grpc serve` with HOME at tmp_path (its default home: tmp_path/.pioneer), until healthy."""
    address = f"127.0.0.1:{free_port()}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIONEER_")}
    env["HOME"] = str(tmp_path)
    proc = subprocess.Popen(
        [str(SCRIPT), "serve", "--listen", address, *flags],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        wait_serving(address, proc)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)


@pytest.mark.parametrize(
    ("flags", "seeded_home"),
    [
        ((), ".pioneer"),  # `make run`: the first run at the default home
        (("--home", "{tmp}/team"), None),  # a team's home: its own identity, none of Pioneer's
        (("--home", "{tmp}/team", "--seed-bootstrap-files"), "team"),
    ],
    ids=["default home", "a home given", "a home given, seeding asked"],
)
def test_serve_seeds_at_its_default_home_or_when_asked(tmp_path, flags, seeded_home):
    _serve(tmp_path, *(flag.format(tmp=tmp_path) for flag in flags))
    for home in (".pioneer", "team"):
        seeded = (tmp_path / home / "SOUL.md").exists() and (tmp_path / home / "IDENTITY.md").exists()
        assert seeded == (home == seeded_home), home
