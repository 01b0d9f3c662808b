"""Golden bodies: every registered provider over the same requests. UPDATE_GOLDEN=1 rewrites them.

Each golden file holds the path, the breakpoint count and the body, pretty
printed; the body is compared byte for byte after re-serialising it compactly,
so key order is part of what is checked. A case the provider refuses (its
Conformance names it) holds the refusal instead: every field violation, as sent.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from pioneer_grpc.errors import InvalidArgument
from pioneer_grpc.providers import render
from pioneer_grpc.providers.common import dumps
from tests.providers.cases import CASES, PROVIDERS, build, refused

GOLDEN = Path(__file__).parent / "golden"
UPDATE = os.environ.get("UPDATE_GOLDEN") == "1"


def _refusal(case: str, provider: int) -> dict[str, Any]:
    with pytest.raises(InvalidArgument) as info:
        render(provider, build(case, provider))
    return {"refused": [{"field": v.field, "description": v.description} for v in info.value.violations]}


@pytest.mark.parametrize("provider_name", list(PROVIDERS))
@pytest.mark.parametrize("case", list(CASES))
def test_golden_body(case: str, provider_name: str) -> None:
    provider = PROVIDERS[provider_name]
    golden = GOLDEN / f"{case}.{provider_name}.json"
    if refused(case, provider):
        actual = _refusal(case, provider)
        if UPDATE:
            golden.write_text(json.dumps(actual, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
        assert actual == json.loads(golden.read_text(encoding="utf-8"))
        return
    rendered = render(provider, build(case, provider))
    actual = {
        "path": rendered.path,
        "cache_breakpoints": rendered.cache_breakpoints,
        "body": json.loads(rendered.body_json),
    }
    if UPDATE:
        golden.write_text(json.dumps(actual, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    expected = json.loads(golden.read_text(encoding="utf-8"))
    assert rendered.path == expected["path"]
    assert rendered.cache_breakpoints == expected["cache_breakpoints"]
    assert rendered.body_json == dumps(expected["body"])


def test_every_golden_file_is_used() -> None:
    wanted = {f"{case}.{name}.json" for case in CASES for name in PROVIDERS}
    assert {p.name for p in GOLDEN.glob("*.json")} == wanted
