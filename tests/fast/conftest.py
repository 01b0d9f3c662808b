"""The fast tier: every use case on the in-memory store (store/memory.py), no server, no database.

`make test-fast` runs these with the store port's contract suite on the same fake and the
pure cores' unit tests; the end-to-end tests keep what only a real server, a real
database and real clients can show. A remote model is never asked: the summarizer is the
extractive one, and no provider's count-tokens endpoint is configured.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from pioneer_grpc.adapters import build_summarizer
from pioneer_grpc.compiler.seed import ensure_bootstrap_files
from pioneer_grpc.config import Config
from pioneer_grpc.events.hub import ManifestHub
from pioneer_grpc.models.registry import packaged_registry
from pioneer_grpc.service.context import ServiceContext
from pioneer_grpc.store.memory import MemoryStore
from tests.ci_guard import pytest_runtest_makereport  # noqa: F401  (under CI=true a skip fails)
from tests.crossings import Crossings, counted


@pytest.fixture
def crossings() -> Crossings:
    return Crossings()


@pytest.fixture
async def ctx(tmp_path: Path, crossings: Crossings) -> AsyncIterator[ServiceContext]:
    home = tmp_path / "home"
    home.mkdir()
    ensure_bootstrap_files(home)
    models = packaged_registry()
    store = counted(MemoryStore(models.tokenizer_of), crossings)
    hub = ManifestHub(store.manifests, poll_seconds=3600)
    await hub.start()
    context = ServiceContext(
        config=Config(listen="127.0.0.1:0", home=home),
        root_store=store,
        hub=hub,
        summarizer=build_summarizer("extractive"),
        models=models,
    )
    yield context
    await hub.close()


def configured(ctx: ServiceContext, **settings: Any) -> ServiceContext:
    """`ctx` with other settings (its compile cache built again for them)."""
    return replace(ctx, config=replace(ctx.config, **settings))
