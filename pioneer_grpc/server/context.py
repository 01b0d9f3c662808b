"""What servicers share: configuration, the database, and the long-lived services."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.ext.asyncio import AsyncEngine, async_sessionmaker

from pioneer_grpc.compiler.cache import CompileCache
from pioneer_grpc.server.config import Config


@dataclass
class ServerContext:
    config: Config
    engine: AsyncEngine
    sessions: async_sessionmaker[Any]
    # Persists a compile's manifest on its turn and publishes the event:
    # `await manifests.record(thread_id, turn_id, manifest) -> event_id`.
    manifests: Any = None
    # Fan-out of manifest events to live observers.
    hub: Any = None
    # History summarizer (`pioneer_grpc.history` interface).
    summarizer: Any = None
    # Compiled prompts of recent inputs, reused while nothing they read has changed.
    compile_cache: CompileCache = field(default_factory=CompileCache)
    # Run in reverse order when the server stops (after RPCs drained).
    on_shutdown: list[Callable[[], Awaitable[None]]] = field(default_factory=list)
