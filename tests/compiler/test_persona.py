"""The persona: the server's identity text, replaced or left out per request, and fingerprinted."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pioneer_grpc.compiler import CompileSettings, compile_prompt
from pioneer_grpc.compiler.cache import CompileCache
from pioneer_grpc.compiler.render import policies
from pioneer_grpc.compiler.seed import IDENTITY_SEED, SOUL_SEED, ensure_bootstrap_files
from pioneer_grpc.compiler.text import sanitize
from pioneer_grpc.errors import InvalidArgument
from pioneer_grpc.v1 import prompt_pb2

from .inputs import full_profile_input, write_home

SCOUT = "You are Scout, a browser agent that files expense reports for the finance team."
PROFILES = [prompt_pb2.PROMPT_PROFILE_FULL, prompt_pb2.PROMPT_PROFILE_MINIMAL, prompt_pb2.PROMPT_PROFILE_NONE]


def identity(payload: prompt_pb2.CompiledPromptPayload) -> prompt_pb2.PromptSection:
    (section,) = [s for s in payload.sections if s.id == "identity_base"]
    return section


def violations(request: prompt_pb2.PromptCompileInput, home: Path) -> list[tuple[str, str]]:
    with pytest.raises(InvalidArgument) as caught:
        compile_prompt(request, [home])
    return [(v.field, v.description) for v in caught.value.violations]


@pytest.mark.parametrize("profile", PROFILES)
def test_the_seed_text_is_the_default_persona(home: Path, profile: int) -> None:
    payload = compile_prompt(prompt_pb2.PromptCompileInput(profile=profile), [home])
    assert identity(payload).content == policies.IDENTITY_BASE
    assert list(identity(payload).sources) == []
    assert payload.stable_system_text.startswith(f"## Identity\n{policies.IDENTITY_BASE}")


@pytest.mark.parametrize("profile", PROFILES)
def test_a_request_persona_replaces_the_identity_text_and_only_it(home: Path, profile: int) -> None:
    """With its identity files asked for (they are not read with a persona by default)."""
    write_home(home)
    default = compile_prompt(full_profile_input(profile), [home])
    request = full_profile_input(profile)
    request.persona = f"\r\n  {SCOUT}\r\n"
    request.identity_files = True
    payload = compile_prompt(request, [home])
    assert identity(payload).content == SCOUT
    assert list(identity(payload).sources) == ["input.persona"]
    assert payload.stable_system_text == default.stable_system_text.replace(policies.IDENTITY_BASE, SCOUT, 1)
    assert payload.dynamic_system_text == default.dynamic_system_text
    assert list(payload.manifest.section_ids) == list(default.manifest.section_ids)
    # A different persona is a different stable section, and so a different stable prefix.
    assert payload.manifest.fingerprint_stable != default.manifest.fingerprint_stable
    assert identity(payload).fingerprint != identity(default).fingerprint
    others = [(f.section_id, f.fingerprint) for f in payload.manifest.section_fingerprints][1:]
    assert others == [(f.section_id, f.fingerprint) for f in default.manifest.section_fingerprints][1:]
    assert payload.manifest.fingerprint_dynamic == default.manifest.fingerprint_dynamic


@pytest.mark.parametrize("profile", PROFILES)
def test_omit_persona_leaves_the_identity_section_out(home: Path, profile: int) -> None:
    write_home(home)
    default = compile_prompt(full_profile_input(profile), [home])
    request = full_profile_input(profile)
    request.omit_persona = True
    request.identity_files = True
    payload = compile_prompt(request, [home])
    assert "identity_base" not in payload.manifest.section_ids
    assert list(payload.manifest.section_ids) == list(default.manifest.section_ids)[1:]
    assert policies.IDENTITY_BASE not in payload.full_system_text
    if profile == prompt_pb2.PROMPT_PROFILE_NONE:
        assert payload.full_system_text == ""
    else:
        assert payload.stable_system_text.startswith("## Safety\n")
    assert payload.manifest.fingerprint_stable != default.manifest.fingerprint_stable


def test_the_servers_persona_and_its_source(home: Path) -> None:
    settings = CompileSettings(persona=SCOUT, persona_source="/etc/pioneer/persona.md")
    payload = compile_prompt(prompt_pb2.PromptCompileInput(), [home], settings=settings)
    assert identity(payload).content == SCOUT
    assert list(identity(payload).sources) == ["/etc/pioneer/persona.md"]
    # A request still replaces it, or leaves it out.
    own = compile_prompt(prompt_pb2.PromptCompileInput(persona="You are Ledger."), [home], settings=settings)
    assert identity(own).content == "You are Ledger."
    assert list(identity(own).sources) == ["input.persona"]
    dropped = compile_prompt(prompt_pb2.PromptCompileInput(omit_persona=True), [home], settings=settings)
    assert "identity_base" not in dropped.manifest.section_ids


def test_an_empty_server_persona_has_no_identity_section(home: Path) -> None:
    payload = compile_prompt(prompt_pb2.PromptCompileInput(), [home], settings=CompileSettings(persona=""))
    assert payload.manifest.section_ids[0] == "assistant_safety"


def test_same_persona_from_server_or_request_gives_the_same_text_and_fingerprints(home: Path) -> None:
    by_server = compile_prompt(
        prompt_pb2.PromptCompileInput(), [home], settings=CompileSettings(persona=SCOUT)
    )
    by_request = compile_prompt(prompt_pb2.PromptCompileInput(persona=SCOUT), [home])
    assert by_server.full_system_text == by_request.full_system_text
    assert by_server.manifest.fingerprint_full == by_request.manifest.fingerprint_full


def test_the_cache_compiles_with_its_settings(home: Path) -> None:
    write_home(home)
    scout = CompileCache(settings=CompileSettings(persona=SCOUT))
    seed = CompileCache()
    request = full_profile_input()
    assert identity(scout.compile(request, [home])).content == SCOUT
    assert identity(seed.compile(request, [home])).content == policies.IDENTITY_BASE
    request.persona = "You are Ledger."
    assert identity(scout.compile(request, [home])).content == "You are Ledger."


def test_persona_and_omit_persona_together_are_refused(home: Path) -> None:
    request = prompt_pb2.PromptCompileInput(persona=SCOUT, omit_persona=True)
    assert violations(request, home) == [("input.omit_persona", "cannot be set together with persona")]


@pytest.mark.parametrize("blank", ["", "  \r\n\t ", "\ufeff"])
def test_a_blank_persona_is_refused(home: Path, blank: str) -> None:
    assert violations(prompt_pb2.PromptCompileInput(persona=blank), home) == [
        ("input.persona", "must not be blank; set omit_persona to leave the Identity section out")
    ]


def test_a_persona_over_its_cap_is_refused(home: Path) -> None:
    assert compile_prompt(prompt_pb2.PromptCompileInput(persona="x" * 50_000), [home])
    assert violations(prompt_pb2.PromptCompileInput(persona="x" * 50_001), home) == [
        ("input.persona", "at most 50,000 characters (got 50,001)")
    ]
    assert violations(prompt_pb2.PromptCompileInput(persona="a\x00b"), home) == [
        ("input.persona", "must not contain a NUL character")
    ]


@pytest.fixture(scope="module")
def shared_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_home(tmp_path_factory.mktemp("persona").resolve())


personas = st.text(
    st.characters(codec="utf-8", exclude_categories=["Cs"], exclude_characters="\x00"), max_size=300
).filter(lambda t: bool(sanitize(t)))


@settings(max_examples=40, deadline=None)
@given(persona=personas)
def test_any_persona_is_the_identity_section_and_changes_nothing_else(
    shared_home: Path, persona: str
) -> None:
    default = compile_prompt(full_profile_input(), [shared_home])
    request = full_profile_input()
    request.persona = persona
    request.identity_files = True
    payload = compile_prompt(request, [shared_home])
    assert identity(payload).content == sanitize(persona)
    assert payload.sections[1:] == default.sections[1:]
    assert payload.dynamic_system_text == default.dynamic_system_text
    changed = sanitize(persona) != policies.IDENTITY_BASE
    assert (payload.manifest.fingerprint_stable != default.manifest.fingerprint_stable) == changed


# Every line of Pioneer's own SOUL.md and IDENTITY.md ("- Name: Pioneer", "SOUL: who you are ...").
SEEDED_LINES = [line for line in (SOUL_SEED + IDENTITY_SEED).splitlines() if line.strip()]
TEAM_PERSONAS = ["request persona", "server persona", "persona file", "omit persona", "empty server persona"]


def _team(how: str) -> tuple[prompt_pb2.PromptCompileInput, CompileSettings]:
    """A full-profile input and the server settings of a team that brings its own persona `how`."""
    request = full_profile_input()
    settings = CompileSettings()
    if how == "request persona":
        request.persona = SCOUT
    elif how == "server persona":
        settings = CompileSettings(persona=SCOUT, persona_source="server persona")
    elif how == "persona file":
        settings = CompileSettings(persona=SCOUT, persona_source="/etc/scout/persona.md")
    elif how == "omit persona":
        request.omit_persona = True
    else:
        settings = CompileSettings(persona="")
    return request, settings


@pytest.mark.parametrize("how", TEAM_PERSONAS)
@pytest.mark.parametrize("profile", PROFILES)
def test_a_team_persona_prompt_holds_no_seeded_text(home: Path, profile: int, how: str) -> None:
    """With Pioneer's files seeded in the workspace (a first run's), a team's persona is the only identity."""
    write_home(home)
    ensure_bootstrap_files(home / "seeded")
    request, settings = _team(how)
    request.profile = profile  # type: ignore[assignment]
    request.workspace_root = "seeded"
    payload = compile_prompt(request, [home], settings=settings)
    assert [line for line in SEEDED_LINES if line in payload.full_system_text] == []
    assert {"soul_core", "identity_core"}.isdisjoint(payload.manifest.section_ids)
    # Neither read nor reported missing (the none profile says it filters every file, as ever).
    said = {d.code for d in payload.manifest.diagnostics if d.file.endswith(("SOUL.md", "IDENTITY.md"))}
    assert said <= ({"file_filtered_by_profile"} if profile == prompt_pb2.PROMPT_PROFILE_NONE else set())
    assert not [e for e in payload.manifest.source_manifest if e.file in ("SOUL.md", "IDENTITY.md")]
    # The team can still ask for them (its own SOUL.md, say): then they are read as before.
    request.identity_files = True
    asked = compile_prompt(request, [home], settings=settings)
    if profile != prompt_pb2.PROMPT_PROFILE_NONE:
        assert "- Name: Pioneer" in asked.full_system_text
        assert {"soul_core", "identity_core"} <= set(asked.manifest.section_ids)


def test_the_built_in_persona_reads_the_files_unless_told_not_to(home: Path) -> None:
    write_home(home)
    read = compile_prompt(full_profile_input(), [home])
    assert {"soul_core", "identity_core", "user_persona"} <= set(read.manifest.section_ids)
    request = full_profile_input()
    request.identity_files = False
    skipped = compile_prompt(request, [home])
    assert "soul_core" not in skipped.manifest.section_ids
    assert "user_persona" in skipped.manifest.section_ids  # USER.md is the user's, read either way
    # The server's setting decides when the request does not; a request's own field wins.
    never = CompileSettings(identity_files=False)
    assert (
        "soul_core" not in compile_prompt(full_profile_input(), [home], settings=never).manifest.section_ids
    )
    always = CompileSettings(persona=SCOUT, identity_files=True)
    assert "soul_core" in compile_prompt(full_profile_input(), [home], settings=always).manifest.section_ids
    assert "soul_core" not in compile_prompt(request, [home], settings=always).manifest.section_ids
