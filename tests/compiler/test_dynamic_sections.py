"""Caller-defined dynamic sections: limits, diagnostics with the original's wording, hook sources."""

from __future__ import annotations

from pathlib import Path

from pioneer_grpc.v1 import prompt_pb2

from .inputs import compile_in, section


def dyn(section_id: str, content: str, **fields: object) -> prompt_pb2.DynamicSection:
    return prompt_pb2.DynamicSection(id=section_id, content=content, **fields)  # type: ignore[arg-type]


def dynamic_diagnostics(payload: prompt_pb2.CompiledPromptPayload) -> list[tuple[str, str, str]]:
    return [
        (d.code, d.message, d.section_id)
        for d in payload.manifest.diagnostics
        if d.code.startswith("dynamic_")
    ]


def test_untitled_dynamic_section_is_titled_after_its_id(home: Path) -> None:
    rendered = section(compile_in(home, dynamic_sections=[dyn("memory.recall", "x")]), "memory.recall")
    assert (rendered.title, rendered.content) == ("Dynamic: memory.recall", "x")


def test_dynamic_section_truncated_by_the_per_section_limit(home: Path) -> None:
    payload = compile_in(home, dynamic_sections=[dyn("big", "a" * 9_000)])
    assert len(section(payload, "big").content) == 8_000
    assert dynamic_diagnostics(payload) == [
        ("dynamic_section_truncated", "dynamic prompt section `big` truncated: 9000 -> 8000 chars", "big")
    ]


def test_dynamic_section_max_chars_only_lowers_the_limit(home: Path) -> None:
    payload = compile_in(
        home,
        dynamic_sections=[dyn("low", "b" * 100, max_chars=10), dyn("high", "c" * 9_000, max_chars=50_000)],
    )
    assert section(payload, "low").content == "b" * 10
    assert len(section(payload, "high").content) == 8_000


def test_dynamic_section_already_truncated_by_its_hook_is_reported(home: Path) -> None:
    payload = compile_in(home, dynamic_sections=[dyn("cut", "short", truncated=True)])
    assert dynamic_diagnostics(payload) == [
        ("dynamic_section_truncated", "dynamic prompt section `cut` truncated: 5 -> 5 chars", "cut")
    ]


def test_dynamic_section_omitted_when_content_was_empty(home: Path) -> None:
    payload = compile_in(home, dynamic_sections=[dyn("blank", " \n ")])
    assert "blank" not in payload.manifest.section_ids
    assert dynamic_diagnostics(payload) == [
        ("dynamic_section_omitted", "dynamic prompt section `blank` omitted: content was empty", "blank")
    ]


def test_dynamic_section_omitted_when_the_total_budget_is_exhausted(home: Path) -> None:
    sections = [dyn(f"s{i}", "x" * 8_000) for i in range(3)]
    payload = compile_in(home, dynamic_sections=sections)
    assert [s.id for s in payload.sections if s.id.startswith("s")] == ["s0", "s1"]
    assert dynamic_diagnostics(payload) == [
        (
            "dynamic_section_omitted",
            "dynamic prompt section `s2` omitted: dynamic section budget was exhausted",
            "s2",
        )
    ]


def test_dynamic_section_cut_to_what_is_left_of_the_total_budget(home: Path) -> None:
    payload = compile_in(
        home,
        dynamic_sections=[dyn("a", "x" * 20), dyn("b", "y" * 20)],
        limits=prompt_pb2.PromptLimits(max_dynamic_chars_total=30),
    )
    assert section(payload, "b").content == "y" * 10
    assert dynamic_diagnostics(payload) == [
        ("dynamic_section_truncated", "dynamic prompt section `b` truncated: 20 -> 10 chars", "b")
    ]


def test_dynamic_section_omitted_when_the_count_limit_is_reached(home: Path) -> None:
    sections = [dyn(f"n{i}", "x") for i in range(17)]
    payload = compile_in(home, dynamic_sections=sections)
    assert [s.id for s in payload.sections if s.id.startswith("n")] == [f"n{i}" for i in range(16)]
    assert dynamic_diagnostics(payload) == [
        (
            "dynamic_section_omitted",
            "dynamic prompt section `n16` omitted: dynamic section count limit was reached",
            "n16",
        )
    ]


def test_dynamic_section_omitted_when_its_limit_is_zero(home: Path) -> None:
    payload = compile_in(home, dynamic_sections=[dyn("zero", "x", max_chars=0)])
    assert dynamic_diagnostics(payload) == [
        (
            "dynamic_section_omitted",
            "dynamic prompt section `zero` omitted: section character limit was zero",
            "zero",
        )
    ]


def test_dynamic_section_hook_source_is_recorded_with_who_truncated(home: Path) -> None:
    hook = prompt_pb2.HookSource(
        source=prompt_pb2.HookRef(
            hook_id="weather", subscription_id="s1", phase=prompt_pb2.HOOK_PHASE_TURN_PRE_PROMPT_CONTEXT
        ),
        contribution_kind=prompt_pb2.CONTRIBUTION_KIND_PROMPT_SECTION,
        priority=10,
        label="weather hook",
    )
    extra = prompt_pb2.HookSource(source=prompt_pb2.HookRef(hook_id="audit"), label="audit")
    payload = compile_in(
        home,
        dynamic_sections=[dyn("w", "z" * 20, hook_source=hook, truncated=True, max_chars=5)],
        hook_sources=[extra],
    )
    recorded = list(payload.manifest.hook_sources)
    assert len(recorded) == 2
    assert recorded[1] == extra
    expected = prompt_pb2.HookSource()
    expected.CopyFrom(hook)
    expected.section_id = "w"
    expected.truncation = prompt_pb2.TRUNCATION_HOOK_AND_PROMPT
    assert recorded[0] == expected
    assert list(section(payload, "w").sources) == ["weather hook"]
    assert [d.hook_source for d in payload.manifest.diagnostics if d.section_id == "w"] == ["weather hook"]


def test_dynamic_section_title_cannot_inject_a_heading(home: Path) -> None:
    payload = compile_in(home, dynamic_sections=[dyn("t", "body", title="Real\n## Fake")])
    assert section(payload, "t").title == "Real ## Fake"
