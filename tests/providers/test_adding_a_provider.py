"""A provider is in every matrix of the suite by being registered, and the suite asks for its tests.

A sixth provider is registered (a spec with a renderer module of its own, and its
Conformance where the tests look for it) by a plugin of a pytest run that only
collects: every test over every provider then has a case for it, with no list
edited. Without its tests folder the suite stops, naming it.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from pioneer_grpc.providers.specs import BY_NAME, SPECS
from tests.providers.conformance import conformances_of

ROOT = Path(__file__).resolve().parents[2]
SIXTH = 99
NAME = "echo-chat"

# What a provider's module and its tests folder declare, here in one plugin module:
# the spec (providers/apis/<name>.py) and the Conformance (tests/providers/<name>/conformance.py).
PLUGIN = f'''
import sys
import types
from dataclasses import replace

from pioneer_grpc.providers import specs
from pioneer_grpc.providers.apis import openai_chat
from tests.providers.openai_chat import conformance


def render(prepared):
    return openai_chat.render(prepared)


SPEC = replace(openai_chat.SPEC, provider={SIXTH}, name="{NAME}", telemetry_name="echo", render=render)
specs.SPECS[SPEC.provider] = SPEC
specs.BY_NAME[SPEC.name] = SPEC
room = types.ModuleType("tests.providers.sixth_provider.conformance")
room.CONFORMANCE = replace(conformance.CONFORMANCE, provider={SIXTH})
sys.modules[room.__name__] = room
'''

# Every test module whose matrix is "every provider" (hand-listed before, from the registry now).
MATRICES = [
    "tests/providers/test_golden.py",
    "tests/providers/test_caching.py",
    "tests/providers/test_sdk_acceptance.py",
    "tests/providers/test_provider_rules.py",
    "tests/providers/test_notices.py",
    "tests/providers/test_validation.py",
    "tests/providers/test_tool_result_media.py",
    "tests/providers/test_render_after.py",
    "tests/providers/test_prefix_boundary.py",
    "tests/providers/test_generated_sessions.py",
    "tests/providers/test_specs.py",
    "tests/providers/test_long_call_names.py",
    "tests/server/test_examples.py",
    "tests/history/test_artifact_rule.py",
    "tests/turn/test_prefix_after_completed_turn.py",
    "tests/chaos/test_content_statuses.py",
]


def test_a_registered_sixth_provider_is_in_every_matrix(tmp_path: Path) -> None:
    (tmp_path / "sixth_provider.py").write_text(PLUGIN)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "sixth_provider", "--collect-only", "-q", *MATRICES],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": f"{tmp_path}:{ROOT}"},
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    ids = [line for line in done.stdout.splitlines() if "::" in line]
    sixth = re.compile(rf"\[(.*-)?({NAME}|{SIXTH})(-.*)?\]")
    for module in MATRICES:
        of_module = [i for i in ids if i.startswith(module)]
        assert of_module, module
        assert any(sixth.search(i) for i in of_module), f"{module} has no case for the sixth provider"
    # Golden bodies are asked for: one per case, written by UPDATE_GOLDEN=1.
    assert "tests/providers/test_golden.py::test_golden_body[plain-echo-chat]" in ids


def test_a_registered_provider_without_tests_stops_the_suite_naming_it() -> None:
    def render(prepared):  # type: ignore[no-untyped-def]
        return BY_NAME["openai-chat"].render(prepared)

    render.__module__ = "pioneer_grpc.providers.apis.sixth_provider"  # its own module, no tests folder
    spec = replace(BY_NAME["openai-chat"], provider=SIXTH, name=NAME, render=render)
    with pytest.raises(KeyError, match=NAME):
        conformances_of({**SPECS, SIXTH: spec})
