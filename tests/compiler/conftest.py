from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """An empty runtime home (resolved, so paths in prompts compare exactly)."""
    path = (tmp_path / "home").resolve()
    path.mkdir()
    return path
