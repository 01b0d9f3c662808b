"""Memory as its policy says, and profiles that drop an input say so (issue 12)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pioneer_grpc.v1 import prompt_pb2

from .inputs import codes, compile_in, full_profile_input, section, write_home

ITEMS = [
    prompt_pb2.MemoryItem(scope="user", category="fact", content="Lives in Lyon."),
    prompt_pb2.MemoryItem(scope="user", category="preference", content="Prefers tea."),
]
# Wording that tells the model to act on memory with a tool.
TOOL_INSTRUCTIONS = ("Search it", "Save a memory", "remove one", "search it and use", "tools you can call")


def recall(policy: int, tools: list[str] | None = None) -> prompt_pb2.MemoryRecall:
    return prompt_pb2.MemoryRecall(
        policy=policy,  # type: ignore[arg-type]
        items=ITEMS,
        available_tools=tools or [],
        thread_context="The user asked about moving house.",
        task_context="Task: pack the kitchen.",
    )


def test_forget_only_shows_no_recalled_content(home: Path) -> None:
    payload = compile_in(home, memory_recall=recall(prompt_pb2.MEMORY_POLICY_FORGET_ONLY, ["memory_forget"]))
    text = section(payload, "memory_recall").content
    for recalled in ("Lyon", "tea", "moving house", "pack the kitchen", "Relevant memory context"):
        assert recalled not in payload.full_system_text, recalled
    assert "`memory_forget`" in text
    withheld = [d for d in payload.manifest.diagnostics if d.code == "memory_withheld_by_policy"]
    assert len(withheld) == 1
    assert withheld[0].section_id == "memory_recall"
    assert "2 recalled memories, thread_context, task_context" in withheld[0].message


@pytest.mark.parametrize(
    "policy",
    [prompt_pb2.MEMORY_POLICY_FULL, prompt_pb2.MEMORY_POLICY_READ_ONLY, prompt_pb2.MEMORY_POLICY_FORGET_ONLY],
)
def test_full_policy_without_memory_tools_gives_no_tool_instructions(home: Path, policy: int) -> None:
    text = section(compile_in(home, memory_recall=recall(policy)), "memory_recall").content
    for instruction in TOOL_INSTRUCTIONS:
        assert instruction not in text, instruction
    assert "no memory tools are available" in text.lower()
    if policy != prompt_pb2.MEMORY_POLICY_FORGET_ONLY:
        assert "- user fact: Lives in Lyon." in text


def test_full_policy_with_memory_tools_keeps_its_guidance(home: Path) -> None:
    text = section(
        compile_in(home, memory_recall=recall(prompt_pb2.MEMORY_POLICY_FULL, ["memory_search"])),
        "memory_recall",
    ).content
    assert "Search it when" in text
    assert "`memory_search`" in text
    assert "Thread context:" in text


def test_minimal_profile_dropping_inputs_leaves_a_diagnostic(home: Path) -> None:
    payload = compile_in(
        home,
        profile=prompt_pb2.PROMPT_PROFILE_MINIMAL,
        skills=prompt_pb2.SkillsInput(active_skills=[prompt_pb2.Skill(slug="pdf", description="PDFs")]),
        dynamic_context="Focus: the report.",
        include_tool_recovery_policy=True,
    )
    dropped = {
        d.section_id: d.message for d in payload.manifest.diagnostics if d.code == "input_dropped_by_profile"
    }
    tail = "was set but the minimal profile does not render it"
    assert dropped == {
        "tool_recovery_policy": f"input `include_tool_recovery_policy` {tail}",
        "dynamic_context": f"input `dynamic_context` {tail}",
        "skills_runtime_prompt": f"input `skills` {tail}",
    }
    assert "Focus: the report." not in payload.full_system_text


def test_full_profile_drops_nothing(home: Path) -> None:
    write_home(home)
    assert "input_dropped_by_profile" not in codes(compile_in(home, full_profile_input()))
