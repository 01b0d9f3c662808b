"""Golden files: the full, minimal and none profiles compiled from every input.

The runtime home is a temporary directory, so its path is written as {HOME}
and fingerprints of text that contains it are written as a placeholder; every
other fingerprint is compared exactly. Bootstrap headings name their files
relative to the home (~/.pioneer/SOUL.md), so the stable half and its
fingerprint are compared exactly; only manifest paths and sources show {HOME}.
Regenerate with UPDATE_GOLDEN=1.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from google.protobuf import json_format

import pioneer_grpc
from pioneer_grpc.v1 import prompt_pb2

from .inputs import compile_in, full_profile_input, write_home

GOLDEN = Path(__file__).parent / "golden"
HOME_DEPENDENT = "<depends on {HOME}>"
PROFILES = {
    "full": prompt_pb2.PROMPT_PROFILE_FULL,
    "minimal": prompt_pb2.PROMPT_PROFILE_MINIMAL,
    "none": prompt_pb2.PROMPT_PROFILE_NONE,
}


@pytest.fixture
def golden_home() -> Iterator[Path]:
    """A home whose path always has the same length: `chars` of sections that
    show the path are compared exactly, whatever pytest's temporary folder is."""
    path = Path(tempfile.mkdtemp(prefix="pioneer-golden-", dir="/tmp")).resolve()
    try:
        yield path
    finally:
        shutil.rmtree(path)


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def normalized_json(payload: prompt_pb2.CompiledPromptPayload, home: Path) -> str:
    data = json_format.MessageToDict(payload, preserving_proto_field_name=True)
    manifest = data["manifest"]
    home_text = str(home)
    rendered = {s.id: f"## {s.title}\n{s.content}" for s in payload.sections}
    for entry in [*data["sections"], *manifest.get("section_fingerprints", [])]:
        if home_text in rendered[entry.get("id", entry.get("section_id"))]:
            entry["fingerprint"] = HOME_DEPENDENT
    for half, text in (
        ("fingerprint_stable", payload.stable_system_text),
        ("fingerprint_dynamic", payload.dynamic_system_text),
        ("fingerprint_full", payload.full_system_text),
    ):
        if home_text in text:
            manifest[half] = HOME_DEPENDENT
    manifest["compiler_version"] = "{VERSION}"
    return json.dumps(data, indent=2, ensure_ascii=False).replace(home_text, "{HOME}") + "\n"


@pytest.mark.parametrize("name", list(PROFILES))
def test_golden_compile(name: str, golden_home: Path) -> None:
    home = golden_home
    write_home(home)
    payload = compile_in(home, full_profile_input(PROFILES[name]))
    text = payload.full_system_text.replace(str(home), "{HOME}") + "\n"
    as_json = normalized_json(payload, home)
    if os.environ.get("UPDATE_GOLDEN") == "1":
        GOLDEN.mkdir(exist_ok=True)
        (GOLDEN / f"{name}.txt").write_text(text, encoding="utf-8")
        (GOLDEN / f"{name}.json").write_text(as_json, encoding="utf-8")
    assert text == (GOLDEN / f"{name}.txt").read_text(encoding="utf-8")
    assert as_json == (GOLDEN / f"{name}.json").read_text(encoding="utf-8")


@pytest.mark.parametrize("name", list(PROFILES))
def test_fingerprints_are_sha256_of_the_texts(name: str, home: Path) -> None:
    write_home(home)
    payload = compile_in(home, full_profile_input(PROFILES[name]))
    manifest = payload.manifest
    assert manifest.compiler_version == pioneer_grpc.__version__
    assert manifest.fingerprint_stable == sha256(payload.stable_system_text)
    assert manifest.fingerprint_dynamic == sha256(payload.dynamic_system_text)
    assert manifest.fingerprint_full == sha256(payload.full_system_text)
    assert [(f.section_id, f.fingerprint, f.chars) for f in manifest.section_fingerprints] == [
        (s.id, sha256(f"## {s.title}\n{s.content}"), len(f"## {s.title}\n{s.content}"))
        for s in payload.sections
    ]
    assert all(s.fingerprint == sha256(f"## {s.title}\n{s.content}") for s in payload.sections)
