"""Bootstrap headings name files relative to their home, so replicas agree on the stable text."""

from __future__ import annotations

from pathlib import Path

from pioneer_grpc.compiler import CompileSettings, compile_prompt
from pioneer_grpc.v1 import prompt_pb2

from .inputs import full_profile_input, write_home

STABLE = prompt_pb2.SECTION_STABILITY_STABLE


def headings(payload: prompt_pb2.CompiledPromptPayload) -> list[str]:
    return [line for line in payload.stable_system_text.splitlines() if line.startswith("### ")]


def stable_fingerprints(payload: prompt_pb2.CompiledPromptPayload) -> list[tuple[str, str, int]]:
    found = payload.manifest.section_fingerprints
    return [(f.section_id, f.fingerprint, f.chars) for f in found if f.stability == STABLE]


def test_two_homes_at_different_paths_give_the_same_stable_text_and_fingerprint(tmp_path: Path) -> None:
    first = write_home((tmp_path / "replica-a" / "srv" / ".pioneer").resolve())
    second = write_home((tmp_path / "b" / "another-longer-path" / "home").resolve())
    one = compile_prompt(full_profile_input(), [first])
    two = compile_prompt(full_profile_input(), [second])
    assert one.stable_system_text.encode() == two.stable_system_text.encode()
    assert one.manifest.fingerprint_stable == two.manifest.fingerprint_stable
    stable = stable_fingerprints(one)
    assert stable == stable_fingerprints(two)
    assert len(stable) == 6
    assert headings(one) == [
        "### SOUL.md (~/.pioneer/SOUL.md)",
        "### IDENTITY.md (~/.pioneer/IDENTITY.md)",
        "### USER.md (~/.pioneer/USER.md)",
    ]
    assert str(first) not in one.stable_system_text
    # The manifest still says where each file was read on this machine.
    assert [e.path for e in one.manifest.source_manifest if e.file == "SOUL.md"] == [f"{first}/SOUL.md"]
    assert [e.path for e in two.manifest.source_manifest if e.file == "SOUL.md"] == [f"{second}/SOUL.md"]


def test_a_workspace_below_the_home_is_named_below_the_label(home: Path) -> None:
    write_home(home / "team" / "a")
    payload = compile_prompt(prompt_pb2.PromptCompileInput(workspace_root="team/a"), [home])
    assert headings(payload)[0] == "### SOUL.md (~/.pioneer/team/a/SOUL.md)"


def test_the_home_label_is_configurable(home: Path) -> None:
    write_home(home)
    labelled = compile_prompt(
        prompt_pb2.PromptCompileInput(), [home], settings=CompileSettings(home_label="/srv/agent/")
    )
    assert headings(labelled)[0] == "### SOUL.md (/srv/agent/SOUL.md)"
    bare = compile_prompt(prompt_pb2.PromptCompileInput(), [home], settings=CompileSettings(home_label=""))
    assert headings(bare)[0] == "### SOUL.md (SOUL.md)"


def test_extra_homes_show_their_label_or_else_their_path(tmp_path: Path) -> None:
    home = (tmp_path / "home").resolve()
    home.mkdir()
    labelled = write_home((tmp_path / "shared").resolve())
    unlabelled = write_home((tmp_path / "scratch").resolve())
    settings = CompileSettings(extra_home_labels=("~/shared",))
    roots = [home, labelled, unlabelled]
    into = compile_prompt(
        prompt_pb2.PromptCompileInput(workspace_root=str(labelled)), roots, settings=settings
    )
    assert headings(into)[0] == "### SOUL.md (~/shared/SOUL.md)"
    past = compile_prompt(
        prompt_pb2.PromptCompileInput(workspace_root=str(unlabelled)), roots, settings=settings
    )
    assert headings(past)[0] == f"### SOUL.md ({unlabelled}/SOUL.md)"
