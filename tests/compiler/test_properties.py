"""Property tests: determinism, a stable half that ignores dynamic inputs, and budgets that hold."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pioneer_grpc.compiler import compile_prompt
from pioneer_grpc.compiler.sections import BUILTIN_SECTION_IDS
from pioneer_grpc.v1 import common_pb2, prompt_pb2

from .inputs import write_home

SETTINGS = settings(max_examples=40, deadline=None)

# NUL is refused in every request string (it cannot be stored in PostgreSQL text).
text = st.text(
    st.characters(codec="utf-8", exclude_categories=["Cs"], exclude_characters="\x00"), max_size=300
)
# Mostly long runs, so budgets are actually reached; some short mixed text for variety.
long_text = st.one_of(
    st.tuples(st.sampled_from(["a", "é", "𝄞", "ab c\n", " "]), st.integers(0, 1_500)).map(
        lambda t: t[0] * t[1]
    ),
    st.text(st.sampled_from("ab cé\n€𝄞"), max_size=300),
)
section_ids = st.from_regex(r"[a-z][a-z0-9_.\-]{0,12}", fullmatch=True).filter(
    lambda s: s not in BUILTIN_SECTION_IDS
)
small_limit = st.none() | st.integers(min_value=0, max_value=400)


@st.composite
def dynamic_sections(draw: st.DrawFn, max_size: int = 20) -> list[prompt_pb2.DynamicSection]:
    ids = draw(st.lists(section_ids, unique=True, max_size=max_size))
    out = []
    for section_id in ids:
        item = prompt_pb2.DynamicSection(
            id=section_id, content=draw(long_text), truncated=draw(st.booleans())
        )
        if draw(st.booleans()):
            item.title = draw(text)
        cap = draw(small_limit)
        if cap is not None:
            item.max_chars = cap
        out.append(item)
    return out


artifact = st.builds(
    common_pb2.ArtifactRef,
    artifact_id=st.sampled_from(["a1", "a2", "a3"]),
    display_name=text,
    kind=st.sampled_from(["image", "file"]),
    size_bytes=st.integers(min_value=0, max_value=10**12),
)
snippet = st.builds(
    prompt_pb2.ThreadContextSnippet,
    snippet_id=st.from_regex(r"thread:[a-z0-9]{1,4}/[a-z0-9]{1,4}/chunk_[0-9]", fullmatch=True),
    text=long_text,
    artifacts=st.lists(artifact, max_size=4),
)
memory_item = st.builds(
    prompt_pb2.MemoryItem, scope=st.sampled_from(["user", "workspace", ""]), category=text, content=long_text
)
skill = st.builds(
    prompt_pb2.Skill,
    slug=st.from_regex(r"[a-z][a-z0-9\-]{0,10}", fullmatch=True),
    display_name=text,
    description=text,
    body=long_text,
    path_matched=st.booleans(),
)
domain = st.builds(
    prompt_pb2.HiddenToolDomain,
    domain=st.from_regex(r"[a-z_]{1,12}", fullmatch=True),
    tools=st.lists(text, max_size=8),
)


@st.composite
def dynamic_inputs(draw: st.DrawFn) -> prompt_pb2.PromptCompileInput:
    """Inputs that only feed the dynamic half."""
    request = prompt_pb2.PromptCompileInput(
        include_task_orchestration_policy=draw(st.booleans()),
        continue_generation_hint=draw(st.booleans()),
        dynamic_sections=draw(dynamic_sections()),
        thread_context=draw(st.lists(snippet, max_size=6)),
        hidden_tool_domains=draw(st.lists(domain, max_size=40)),
        memory_recall=prompt_pb2.MemoryRecall(
            policy=draw(st.sampled_from(list(prompt_pb2.MemoryPolicy.values()))),
            items=draw(st.lists(memory_item, max_size=8)),
        ),
        skills=prompt_pb2.SkillsInput(
            active_skills=draw(st.lists(skill, max_size=8, unique_by=lambda s: s.slug)),
            include_read_skill_hint=draw(st.booleans()),
        ),
        permissions=prompt_pb2.PermissionProfile(
            mode=draw(st.sampled_from(list(prompt_pb2.PermissionMode.values()))),
            denied_tools=draw(st.lists(text, max_size=3)),
        ),
    )
    for field in ("skills_prompt", "retry_instruction", "dynamic_context", "extra_system"):
        value = draw(st.none() | text)
        if value is not None:
            setattr(request, field, value)
    if draw(st.booleans()):
        request.agents_md.content.content = draw(long_text)
    return request


def limits() -> st.SearchStrategy[prompt_pb2.PromptLimits]:
    names = [f.name for f in prompt_pb2.PromptLimits.DESCRIPTOR.fields]
    return st.fixed_dictionaries(
        {}, optional={name: st.integers(min_value=0, max_value=3_000) for name in names}
    ).map(lambda values: prompt_pb2.PromptLimits(**values))


@pytest.fixture(scope="module")
def shared_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One home for every example: the bootstrap files are part of the stable half."""
    return write_home(tmp_path_factory.mktemp("properties").resolve() / "home")


@pytest.fixture(scope="module")
def budget_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("budgets").resolve()


@SETTINGS
@given(request=dynamic_inputs(), limit=limits())
def test_identical_input_gives_byte_identical_output(
    shared_home: Path, request: prompt_pb2.PromptCompileInput, limit: prompt_pb2.PromptLimits
) -> None:
    request.limits.CopyFrom(limit)
    first = compile_prompt(request, [shared_home])
    second = compile_prompt(request, [shared_home])
    assert first.SerializeToString(deterministic=True) == second.SerializeToString(deterministic=True)
    assert first.manifest.fingerprint_full == second.manifest.fingerprint_full


@SETTINGS
@given(one=dynamic_inputs(), other=dynamic_inputs(), recovery=st.booleans())
def test_dynamic_inputs_never_change_the_stable_half(
    shared_home: Path,
    one: prompt_pb2.PromptCompileInput,
    other: prompt_pb2.PromptCompileInput,
    recovery: bool,
) -> None:
    one.include_tool_recovery_policy = other.include_tool_recovery_policy = recovery
    first = compile_prompt(one, [shared_home])
    second = compile_prompt(other, [shared_home])
    assert first.stable_system_text == second.stable_system_text
    assert first.manifest.fingerprint_stable == second.manifest.fingerprint_stable


@SETTINGS
@given(request=dynamic_inputs(), limit=limits(), soul=long_text, identity=long_text, user=long_text)
def test_no_output_exceeds_its_limits(
    budget_home: Path,
    request: prompt_pb2.PromptCompileInput,
    limit: prompt_pb2.PromptLimits,
    soul: str,
    identity: str,
    user: str,
) -> None:
    home = budget_home
    for name, content in (("SOUL.md", soul), ("IDENTITY.md", identity), ("USER.md", user)):
        (home / name).write_text(content, encoding="utf-8")
    request.limits.CopyFrom(limit)
    payload = compile_prompt(request, [home])
    defaults = {
        "max_chars_per_file": 20_000,
        "max_chars_total": 150_000,
        "max_chars_per_dynamic_section": 8_000,
        "max_dynamic_chars_total": 16_000,
        "max_dynamic_sections": 16,
        "max_agents_md_chars": 20_000,
        "max_skills_chars": 24_000,
        "max_thread_context_chars": 2_400,
    }
    effective = {k: min(v, getattr(limit, k)) if limit.HasField(k) else v for k, v in defaults.items()}
    by_id = {s.id: s.content for s in payload.sections}

    bootstrap = [e.chars for e in payload.manifest.source_manifest]
    assert all(chars <= effective["max_chars_per_file"] for chars in bootstrap)
    assert sum(bootstrap) <= effective["max_chars_total"]

    caller = {s.id: s for s in request.dynamic_sections}
    rendered = [s for s in payload.sections if s.id in caller]
    assert len(rendered) <= effective["max_dynamic_sections"]
    assert sum(len(s.content) for s in rendered) <= effective["max_dynamic_chars_total"]
    for s in rendered:
        cap = effective["max_chars_per_dynamic_section"]
        if caller[s.id].HasField("max_chars"):
            cap = min(cap, caller[s.id].max_chars)
        assert len(s.content) <= cap

    assert len(by_id.get("skills_runtime_prompt", "")) <= effective["max_skills_chars"]
    assert len(by_id.get("thread_context", "")) <= effective["max_thread_context_chars"]
    assert len(by_id.get("agents_md", "")) <= effective["max_agents_md_chars"]
    assert len(by_id.get("request_tools.hidden_domains", "")) <= 1_200
    memory = by_id.get("memory_recall", "")
    if "Relevant memory context for this turn:\n" in memory:
        listed = memory.split("Relevant memory context for this turn:\n")[1].split("\n\n")[0].split("\n")
        items = [line for line in listed if line.startswith("- ")]
        assert len(items) <= 5
        assert sum(len(line) for line in items) + len(items) - 1 <= 1_500
