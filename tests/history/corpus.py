"""The token corpus of scripts/token_corpus.py, for tests, and the frozen calibration corpus."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


def corpus_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("token_corpus", ROOT / "scripts" / "token_corpus.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def frozen_corpus() -> list[dict[str, Any]]:
    path = ROOT / "tests" / "data" / "token_corpus.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
