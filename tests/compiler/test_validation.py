"""Bad input is INVALID_ARGUMENT with one field violation per bad field."""

from __future__ import annotations

from pathlib import Path

import pytest

from pioneer_grpc.compiler.validate import input_violations, known_valid
from pioneer_grpc.errors import InvalidArgument
from pioneer_grpc.v1 import prompt_pb2

from .inputs import compile_in, full_profile_input


def violations(home: Path, **fields: object) -> list[tuple[str, str]]:
    with pytest.raises(InvalidArgument) as caught:
        compile_in(home, **fields)
    return [(v.field, v.description) for v in caught.value.violations]


def test_out_of_range_profile(home: Path) -> None:
    assert violations(home, profile=7) == [
        (
            "input.profile",
            "unknown value 7; expected one of PROMPT_PROFILE_UNSPECIFIED, PROMPT_PROFILE_FULL, "
            "PROMPT_PROFILE_MINIMAL, PROMPT_PROFILE_NONE",
        )
    ]


def test_negative_limits_each_named(home: Path) -> None:
    limits = prompt_pb2.PromptLimits(max_chars_per_file=-1, max_dynamic_sections=-5, max_skills_chars=0)
    assert violations(home, limits=limits) == [
        ("input.limits.max_chars_per_file", "must not be negative"),
        ("input.limits.max_dynamic_sections", "must not be negative"),
    ]


def test_bad_dynamic_section_ids_each_named(home: Path) -> None:
    sections = [
        prompt_pb2.DynamicSection(id="ok.one", content="x"),
        prompt_pb2.DynamicSection(id="", content="x"),
        prompt_pb2.DynamicSection(id="has space", content="x"),
        prompt_pb2.DynamicSection(id="extra_system", content="x"),
        prompt_pb2.DynamicSection(id="ok.one", content="y"),
        prompt_pb2.DynamicSection(id="neg", content="y", max_chars=-1),
        prompt_pb2.DynamicSection(id="request_tools.hidden_domains", content="x"),
    ]
    assert violations(home, dynamic_sections=sections) == [
        ("input.dynamic_sections[1].id", "must not be empty"),
        ("input.dynamic_sections[2].id", "must not contain whitespace"),
        ("input.dynamic_sections[3].id", "collides with the built-in section id 'extra_system'"),
        ("input.dynamic_sections[4].id", "duplicates input.dynamic_sections[0].id"),
        ("input.dynamic_sections[5].max_chars", "must not be negative"),
        (
            "input.dynamic_sections[6].id",
            "collides with the built-in section id 'request_tools.hidden_domains'",
        ),
    ]


def test_domain_qualified_id_that_resembles_a_built_in_is_fine(home: Path) -> None:
    payload = compile_in(home, dynamic_sections=[prompt_pb2.DynamicSection(id="memory.recall", content="x")])
    assert "memory.recall" in payload.manifest.section_ids


def test_all_bad_fields_are_reported_together(home: Path) -> None:
    request = prompt_pb2.PromptCompileInput(
        profile=9,
        limits=prompt_pb2.PromptLimits(max_agents_md_chars=-2),
        skills=prompt_pb2.SkillsInput(active_skills=[prompt_pb2.Skill(slug=" ")]),
        memory_recall=prompt_pb2.MemoryRecall(policy=42),
        permissions=prompt_pb2.PermissionProfile(
            mode=8, rules=[prompt_pb2.PermissionRule(category="shell", decision=6)]
        ),
    )
    with pytest.raises(InvalidArgument) as caught:
        compile_in(home, request)
    assert [v.field for v in caught.value.violations] == [
        "input.profile",
        "input.limits.max_agents_md_chars",
        "input.skills.active_skills[0].slug",
        "input.memory_recall.policy",
        "input.permissions.mode",
        "input.permissions.rules[0].decision",
    ]
    assert caught.value.message.startswith("invalid prompt compile input: input.profile: unknown value 9;")


def test_validation_happens_before_any_file_is_read(home: Path) -> None:
    (home / "SOUL.md").mkdir()
    with pytest.raises(InvalidArgument):
        compile_in(home, profile=99, workspace_root="../../elsewhere")


def test_a_valid_input_is_remembered_and_an_invalid_one_never() -> None:
    valid = full_profile_input()
    valid.extra_system = "remembered-marker"
    assert not known_valid(valid)
    assert input_violations(valid) == []
    assert known_valid(valid)

    invalid = full_profile_input()
    invalid.profile = 7  # type: ignore[assignment]
    first = input_violations(invalid)
    assert [v.field for v in first] == ["input.profile"]
    assert input_violations(invalid) == first
    assert not known_valid(invalid)

    # One changed byte is another input, walked again.
    over_cap = full_profile_input()
    over_cap.extra_system = "remembered-marker"
    over_cap.skills.active_skills[0].slug = "x" * 100_000
    assert not known_valid(over_cap)
    assert [v.field for v in input_violations(over_cap)] == ["input.skills.active_skills[0].slug"]
