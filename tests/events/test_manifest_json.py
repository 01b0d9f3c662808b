"""The JSON stored on a turn is exactly `json_format.MessageToJson`'s, whether printed or remembered."""

from __future__ import annotations

from pathlib import Path

from google.protobuf import json_format

from pioneer_grpc.compiler import compile_prompt
from pioneer_grpc.store.manifest_json import manifest_json
from pioneer_grpc.v1 import prompt_pb2
from tests.compiler.inputs import full_profile_input, write_home


def reference(manifest: prompt_pb2.PromptManifest) -> str:
    return json_format.MessageToJson(manifest, preserving_proto_field_name=True, indent=None, sort_keys=True)


def compiled_manifest(tmp_path: Path) -> prompt_pb2.PromptManifest:
    home = write_home(tmp_path / "home")
    compile_input = full_profile_input()
    compile_input.workspace_root = str(home)
    return compile_prompt(compile_input, [home]).manifest


def with_ids(manifest: prompt_pb2.PromptManifest, thread_id: str, turn_id: str) -> prompt_pb2.PromptManifest:
    copy = prompt_pb2.PromptManifest()
    copy.CopyFrom(manifest)
    copy.thread_id, copy.turn_id = thread_id, turn_id
    return copy


def test_each_turn_of_a_remembered_manifest_prints_its_own_ids(tmp_path: Path) -> None:
    manifest = compiled_manifest(tmp_path)
    turns = [with_ids(manifest, "thread-é", f"turn-{i}") for i in range(3)]
    printed = [manifest_json(m) for m in turns]
    assert printed == [reference(m) for m in turns]
    assert len(set(printed)) == 3
    assert '"turn_id": "turn-2"' in printed[2]
    assert '"thread_id": "thread-\\u00e9"' in printed[0]


def test_a_manifest_without_ids_and_a_changed_manifest(tmp_path: Path) -> None:
    manifest = compiled_manifest(tmp_path)
    assert manifest_json(manifest) == reference(manifest)
    for thread_only in (with_ids(manifest, "t", ""), with_ids(manifest, "", "u")):
        assert manifest_json(thread_only) == reference(thread_only)
    changed = with_ids(manifest, "t", "u")
    changed.section_fingerprints[0].fingerprint += "0"
    assert manifest_json(changed) == reference(changed)
    assert manifest_json(with_ids(manifest, "t", "u")) != manifest_json(changed)


def test_printing_does_not_alter_what_is_remembered(tmp_path: Path) -> None:
    manifest = compiled_manifest(tmp_path)
    first = manifest_json(with_ids(manifest, "a", "b"))
    manifest_json(with_ids(manifest, "c", "d"))
    assert manifest_json(with_ids(manifest, "a", "b")) == first
    assert manifest_json(manifest) == reference(manifest)
