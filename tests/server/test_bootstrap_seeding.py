"""At start the server seeds SOUL.md and IDENTITY.md when missing and never overwrites."""

from __future__ import annotations


async def test_start_creates_missing_bootstrap_files(server_factory, tmp_path):
    home = tmp_path / "fresh"
    await server_factory(home=home)
    soul = (home / "SOUL.md").read_text()
    identity = (home / "IDENTITY.md").read_text()
    assert len(soul) > 200
    assert len(identity) > 100
    assert not (home / "USER.md").exists()
    assert (home / "pioneer.db").exists()


async def test_start_leaves_existing_and_empty_files_byte_identical(server_factory, tmp_path):
    home = tmp_path / "custom"
    home.mkdir()
    (home / "SOUL.md").write_bytes(b"my own soul\r\n\xe2\x9c\x93")
    (home / "IDENTITY.md").write_bytes(b"")
    await server_factory(home=home)
    assert (home / "SOUL.md").read_bytes() == b"my own soul\r\n\xe2\x9c\x93"
    assert (home / "IDENTITY.md").read_bytes() == b""


async def test_restart_does_not_rewrite_seeded_files(server_factory, tmp_path):
    home = tmp_path / "again"
    first = await server_factory(home=home)
    before = (home / "SOUL.md").stat().st_mtime_ns
    await first.close()
    await server_factory(home=home)
    assert (home / "SOUL.md").stat().st_mtime_ns == before
