"""Seeding SOUL.md and IDENTITY.md: create when missing, never overwrite."""

from __future__ import annotations

import os
from pathlib import Path

from pioneer_grpc.compiler.bootstrap import EVOLVE_REMINDER
from pioneer_grpc.compiler.seed import IDENTITY_SEED, SOUL_SEED, ensure_bootstrap_files

from .inputs import compile_in, section


def test_creates_missing_files_with_seed_text(home: Path) -> None:
    outcomes = ensure_bootstrap_files(home)
    assert outcomes == [("SOUL.md", home / "SOUL.md", True), ("IDENTITY.md", home / "IDENTITY.md", True)]
    assert (home / "SOUL.md").read_text(encoding="utf-8") == SOUL_SEED
    assert (home / "IDENTITY.md").read_text(encoding="utf-8") == IDENTITY_SEED
    assert not (home / "USER.md").exists()


def test_creates_the_home_directory_when_missing(tmp_path: Path) -> None:
    home = tmp_path / "new" / "home"
    assert [created for _, _, created in ensure_bootstrap_files(home)] == [True, True]


def test_existing_files_stay_byte_identical(home: Path) -> None:
    (home / "SOUL.md").write_bytes(b"my own soul\r\n\xff")
    os.utime(home / "SOUL.md", (1_000_000, 1_000_000))
    outcomes = ensure_bootstrap_files(home)
    assert outcomes[0] == ("SOUL.md", home / "SOUL.md", False)
    assert (home / "SOUL.md").read_bytes() == b"my own soul\r\n\xff"
    assert (home / "SOUL.md").stat().st_mtime == 1_000_000


def test_empty_files_stay_empty(home: Path) -> None:
    (home / "SOUL.md").write_bytes(b"")
    (home / "IDENTITY.md").write_bytes(b"")
    assert [created for _, _, created in ensure_bootstrap_files(home)] == [False, False]
    assert (home / "SOUL.md").read_bytes() == b""
    assert (home / "IDENTITY.md").read_bytes() == b""


def test_second_call_changes_nothing(home: Path) -> None:
    ensure_bootstrap_files(home)
    before = {p.name: p.read_bytes() for p in home.iterdir()}
    assert [created for _, _, created in ensure_bootstrap_files(home)] == [False, False]
    assert {p.name: p.read_bytes() for p in home.iterdir()} == before


def test_a_dangling_symlink_is_not_written_through(home: Path, tmp_path: Path) -> None:
    target = tmp_path / "elsewhere.md"
    (home / "SOUL.md").symlink_to(target)
    assert ensure_bootstrap_files(home)[0] == ("SOUL.md", home / "SOUL.md", False)
    assert not target.exists()


def test_seed_texts_cover_their_gist() -> None:
    for topic in ("What you hold to", "Where you draw lines", "How you come across", "Staying yourself"):
        assert topic in SOUL_SEED
    for field in (
        "Name:",
        "Creature:",
        "Role:",
        "Vibe:",
        "Emoji:",
        "Avatar:",
        "Personality:",
        "Working stance:",
    ):
        assert f"- {field}" in IDENTITY_SEED


def test_seeded_home_compiles_with_seed_text_and_reminder(home: Path) -> None:
    ensure_bootstrap_files(home)
    payload = compile_in(home)
    assert section(payload, "soul_core").content == (
        f"### SOUL.md (~/.pioneer/SOUL.md)\n{SOUL_SEED.strip()}\n\n{EVOLVE_REMINDER}"
    )
    assert section(payload, "identity_core").content == (
        f"### IDENTITY.md (~/.pioneer/IDENTITY.md)\n{IDENTITY_SEED.strip()}\n\n{EVOLVE_REMINDER}"
    )
