"""Manifests made by hand, and an observer that collects a WatchManifests stream."""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field

import grpc

from pioneer_grpc.v1 import manifest_service_pb2 as service_pb2
from pioneer_grpc.v1 import manifest_service_pb2_grpc as service_grpc
from pioneer_grpc.v1 import prompt_compiler_service_pb2 as compiler_pb2
from pioneer_grpc.v1 import prompt_compiler_service_pb2_grpc as compiler_grpc
from pioneer_grpc.v1 import prompt_pb2
from tests.support import eventually  # noqa: F401  (events tests import it from here)

STABLE = prompt_pb2.SECTION_STABILITY_STABLE
DYNAMIC = prompt_pb2.SECTION_STABILITY_DYNAMIC


def fp(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def manifest(
    sections: list[tuple[str, int, str]],
    diagnostics: list[tuple[str, str]] | None = None,
    version: str = "0.1.0",
) -> prompt_pb2.PromptManifest:
    """`sections` = (id, stability, content) in prompt order; fingerprints follow from the content."""
    stable = "\n\n".join(c for _, s, c in sections if s == STABLE)
    dynamic = "\n\n".join(c for _, s, c in sections if s == DYNAMIC)
    return prompt_pb2.PromptManifest(
        compiler_version=version,
        profile=prompt_pb2.PROMPT_PROFILE_FULL,
        section_ids=[sid for sid, _, _ in sections],
        fingerprint_stable=fp(stable),
        fingerprint_dynamic=fp(dynamic),
        fingerprint_full=fp(stable + "|" + dynamic),
        section_fingerprints=[
            prompt_pb2.SectionFingerprint(section_id=sid, stability=s, fingerprint=fp(c), chars=len(c))
            for sid, s, c in sections
        ],
        diagnostics=[prompt_pb2.PromptDiagnostic(code=code, message=msg) for code, msg in diagnostics or []],
    )


def numbered_manifest(n: int) -> prompt_pb2.PromptManifest:
    return manifest([("identity", STABLE, "you are pioneer"), ("dynamic_context", DYNAMIC, f"round {n}")])


@dataclass
class Observer:
    """Reads a WatchManifests stream in the background and records what arrives."""

    channel: grpc.aio.Channel
    request: service_pb2.WatchManifestsRequest
    metadata: tuple[tuple[str, str], ...] = ()
    event_ids: list[int] = field(default_factory=list)
    heartbeats: list[service_pb2.Heartbeat] = field(default_factory=list)
    live: asyncio.Event = field(default_factory=asyncio.Event)
    error: grpc.aio.AioRpcError | None = None
    _call: grpc.aio.UnaryStreamCall | None = None
    _task: asyncio.Task[None] | None = None
    _cancelled_by_us: bool = False
    _changed: asyncio.Condition = field(default_factory=asyncio.Condition)

    def start(self) -> Observer:
        stub = service_grpc.ManifestServiceStub(self.channel)
        self._call = stub.WatchManifests(self.request, metadata=self.metadata)
        self._task = asyncio.create_task(self._read())
        return self

    async def _read(self) -> None:
        assert self._call is not None
        try:
            async for response in self._call:
                async with self._changed:
                    if response.HasField("event"):
                        self.event_ids.append(response.event.event_id)
                    else:
                        self.heartbeats.append(response.heartbeat)
                        self.live.set()
                    self._changed.notify_all()
        except grpc.aio.AioRpcError as exc:
            self.error = exc
        except asyncio.CancelledError:
            # A call cancelled by `cancel()` ends its iterator this way.
            if not self._cancelled_by_us:
                raise
        finally:
            async with self._changed:
                self._changed.notify_all()

    async def wait_live(self, within: float = 10) -> None:
        await asyncio.wait_for(self.live.wait(), within)

    async def wait_until(self, condition: Callable[[Observer], bool], within: float = 10) -> None:
        """Until `condition(self)` holds or the stream ends."""

        async def reached() -> None:
            async with self._changed:
                await self._changed.wait_for(
                    lambda: condition(self) or (self._task is not None and self._task.done())
                )

        await asyncio.wait_for(reached(), within)

    async def wait_for_count(self, count: int, within: float = 10) -> list[int]:
        await self.wait_until(lambda o: len(o.event_ids) >= count, within)
        return self.event_ids

    async def ended(self, within: float = 10) -> None:
        assert self._task is not None
        await asyncio.wait_for(asyncio.shield(self._task), within)

    async def cancel(self) -> None:
        assert self._call is not None
        assert self._task is not None
        self._cancelled_by_us = True
        self._call.cancel()
        await asyncio.wait_for(self._task, 10)


async def compile_turn(
    channel: grpc.aio.Channel, thread_id: str, turn_id: str, dynamic_context: str
) -> compiler_pb2.CompilePromptResponse:
    """One agent-loop compile that names its thread and turn."""
    stub = compiler_grpc.PromptCompilerServiceStub(channel)
    return await stub.CompilePrompt(
        compiler_pb2.CompilePromptRequest(
            input=prompt_pb2.PromptCompileInput(dynamic_context=dynamic_context),
            thread_id=thread_id,
            turn_id=turn_id,
        )
    )
