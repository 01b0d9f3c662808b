"""Bootstrap files and their diagnostics: one test per rule."""

from __future__ import annotations

import os
import time
from pathlib import Path

from pioneer_grpc.compiler.bootstrap import EVOLVE_REMINDER
from pioneer_grpc.v1 import prompt_pb2

from .inputs import codes, compile_in, section

LOADED = prompt_pb2.SOURCE_STATUS_LOADED
MISSING = prompt_pb2.SOURCE_STATUS_MISSING
READ_ERROR = prompt_pb2.SOURCE_STATUS_READ_ERROR
TRUNCATED = prompt_pb2.SOURCE_STATUS_TRUNCATED


def manifest_rows(payload: prompt_pb2.CompiledPromptPayload) -> list[tuple[str, int, int]]:
    return [(e.file, e.status, e.chars) for e in payload.manifest.source_manifest]


def test_missing_files_become_missing_file_diagnostics_without_fallback(home: Path) -> None:
    payload = compile_in(home)
    # USER.md is optional: its absence is in the source manifest, not a diagnostic of every turn.
    assert [(d.code, d.message, d.file) for d in payload.manifest.diagnostics] == [
        ("missing_file", "bootstrap file `SOUL.md` is missing", f"{home}/SOUL.md"),
        ("missing_file", "bootstrap file `IDENTITY.md` is missing", f"{home}/IDENTITY.md"),
    ]
    assert manifest_rows(payload) == [
        ("SOUL.md", MISSING, 0),
        ("IDENTITY.md", MISSING, 0),
        ("USER.md", MISSING, 0),
    ]
    assert list(payload.manifest.section_ids) == ["identity_base", "assistant_safety"]


def test_source_manifest_records_every_bootstrap_file(home: Path) -> None:
    (home / "SOUL.md").write_text("abc", encoding="utf-8")
    (home / "IDENTITY.md").write_text("", encoding="utf-8")
    payload = compile_in(home)
    assert [(e.file, e.path, e.status, e.chars) for e in payload.manifest.source_manifest] == [
        ("SOUL.md", f"{home}/SOUL.md", LOADED, 3),
        ("IDENTITY.md", f"{home}/IDENTITY.md", LOADED, 0),
        ("USER.md", f"{home}/USER.md", MISSING, 0),
    ]


def test_soul_and_identity_render_with_the_reminder_even_when_empty(home: Path) -> None:
    (home / "SOUL.md").write_text("", encoding="utf-8")
    (home / "IDENTITY.md").write_text("  \n", encoding="utf-8")
    payload = compile_in(home)
    assert section(payload, "soul_core").content == f"### SOUL.md (~/.pioneer/SOUL.md)\n\n{EVOLVE_REMINDER}"
    assert (
        section(payload, "identity_core").content
        == f"### IDENTITY.md (~/.pioneer/IDENTITY.md)\n\n{EVOLVE_REMINDER}"
    )


def test_reminder_is_rendered_but_never_written_to_the_file(home: Path) -> None:
    (home / "SOUL.md").write_text("soul", encoding="utf-8")
    compile_in(home)
    assert (home / "SOUL.md").read_text(encoding="utf-8") == "soul"


def test_user_md_has_no_reminder_and_empty_user_md_renders_nothing(home: Path) -> None:
    (home / "USER.md").write_text("", encoding="utf-8")
    assert "user_persona" not in compile_in(home).manifest.section_ids
    (home / "USER.md").write_text("Alex", encoding="utf-8")
    assert EVOLVE_REMINDER not in section(compile_in(home), "user_persona").content


def test_file_truncated_by_per_file_limit(home: Path) -> None:
    (home / "SOUL.md").write_text("B" * 120, encoding="utf-8")
    payload = compile_in(home, limits=prompt_pb2.PromptLimits(max_chars_per_file=40))
    assert payload.manifest.diagnostics[0].code == "file_truncated"
    assert payload.manifest.diagnostics[0].message == (
        "bootstrap file `SOUL.md` truncated by per-file limit: 120 -> 40 chars"
    )
    assert payload.manifest.diagnostics[0].file == f"{home}/SOUL.md"
    assert f"\n{'B' * 40}\n\n{EVOLVE_REMINDER}" in section(payload, "soul_core").content
    assert manifest_rows(payload)[0] == ("SOUL.md", TRUNCATED, 40)


def test_total_budget_truncated_spends_the_budget_in_file_order(home: Path) -> None:
    for name, letter in (("SOUL.md", "B"), ("IDENTITY.md", "C"), ("USER.md", "D")):
        (home / name).write_text(letter * 120, encoding="utf-8")
    payload = compile_in(home, limits=prompt_pb2.PromptLimits(max_chars_per_file=40, max_chars_total=50))
    assert [(d.code, d.message) for d in payload.manifest.diagnostics] == [
        ("file_truncated", "bootstrap file `SOUL.md` truncated by per-file limit: 120 -> 40 chars"),
        ("file_truncated", "bootstrap file `IDENTITY.md` truncated by per-file limit: 120 -> 40 chars"),
        ("total_budget_truncated", "bootstrap file `IDENTITY.md` truncated by total budget: 40 -> 10 chars"),
        ("file_truncated", "bootstrap file `USER.md` truncated by per-file limit: 120 -> 40 chars"),
        ("total_budget_truncated", "bootstrap file `USER.md` truncated by total budget: 40 -> 0 chars"),
    ]
    assert manifest_rows(payload) == [
        ("SOUL.md", TRUNCATED, 40),
        ("IDENTITY.md", TRUNCATED, 10),
        ("USER.md", TRUNCATED, 0),
    ]
    assert f"\n{'C' * 10}\n\n" in section(payload, "identity_core").content
    assert "user_persona" not in payload.manifest.section_ids


def test_explicit_limits_only_lower_the_defaults(home: Path) -> None:
    (home / "SOUL.md").write_text("x" * 25_000, encoding="utf-8")
    payload = compile_in(home, limits=prompt_pb2.PromptLimits(max_chars_per_file=1_000_000))
    assert manifest_rows(payload)[0] == ("SOUL.md", TRUNCATED, 20_000)
    assert payload.manifest.diagnostics[0].message == (
        "bootstrap file `SOUL.md` truncated by per-file limit: 25000 -> 20000 chars"
    )


def test_file_read_error_for_a_directory_named_soul_md(home: Path) -> None:
    (home / "SOUL.md").mkdir()
    payload = compile_in(home)
    first = payload.manifest.diagnostics[0]
    assert (first.code, first.message) == (
        "file_read_error",
        "bootstrap file `SOUL.md` could not be read: a directory",
    )
    assert manifest_rows(payload)[0] == ("SOUL.md", READ_ERROR, 0)
    assert "soul_core" not in payload.manifest.section_ids


def test_fifo_named_soul_md_is_a_diagnostic_not_a_hang(home: Path) -> None:
    os.mkfifo(home / "SOUL.md")
    started = time.monotonic()
    payload = compile_in(home)
    assert time.monotonic() - started < 5
    first = payload.manifest.diagnostics[0]
    assert (first.code, first.message) == (
        "file_read_error",
        "bootstrap file `SOUL.md` could not be read: a FIFO",
    )


def test_non_utf8_bytes_become_file_read_error(home: Path) -> None:
    (home / "IDENTITY.md").write_bytes(b"Name: \xff\xfe")
    payload = compile_in(home)
    identity = [d for d in payload.manifest.diagnostics if d.file == f"{home}/IDENTITY.md"]
    assert [(d.code, d.message) for d in identity] == [
        ("file_read_error", "bootstrap file `IDENTITY.md` could not be read: not valid UTF-8 (byte 6)")
    ]
    assert "identity_core" not in payload.manifest.section_ids


def test_multibyte_text_cut_at_the_read_limit_is_not_a_decode_error(home: Path) -> None:
    (home / "SOUL.md").write_text("é" * 100, encoding="utf-8")
    payload = compile_in(home, limits=prompt_pb2.PromptLimits(max_chars_per_file=7))
    assert codes(payload)[0] == "file_truncated"
    assert f"\n{'é' * 7}\n" in section(payload, "soul_core").content


def test_newlines_and_byte_order_mark_are_normalised(home: Path) -> None:
    (home / "SOUL.md").write_bytes("\ufeffline one\r\nline two\rline three\n\n".encode())
    content = section(compile_in(home), "soul_core").content
    assert content.startswith("### SOUL.md (~/.pioneer/SOUL.md)\nline one\nline two\nline three\n\n")


def test_file_filtered_by_profile_under_profile_none(home: Path) -> None:
    (home / "SOUL.md").write_text("soul", encoding="utf-8")
    payload = compile_in(home, profile=prompt_pb2.PROMPT_PROFILE_NONE)
    first = payload.manifest.diagnostics[0]
    assert (first.code, first.message) == (
        "file_filtered_by_profile",
        "bootstrap file `SOUL.md` filtered by profile",
    )
    assert "soul" not in payload.full_system_text
