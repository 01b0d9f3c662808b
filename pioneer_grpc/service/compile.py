"""Prompt compilation use cases: compile (and record the manifest on a turn), seed bootstrap files.

The compiler core reads files, so it runs in a worker thread, unless the compile
cache answers a small input; the manifest is recorded on the event loop
afterwards, in its own transaction.
"""

from __future__ import annotations

import asyncio
import errno
from pathlib import Path

from pioneer_grpc import reasons
from pioneer_grpc.caps import PATH, text_violation
from pioneer_grpc.compiler import ensure_bootstrap_files
from pioneer_grpc.compiler.fsview import FsView
from pioneer_grpc.compiler.paths import resolve_homes, resolve_workspace_root
from pioneer_grpc.errors import FailedPrecondition, InvalidArgument
from pioneer_grpc.history.entries import id_violation
from pioneer_grpc.service import observe, section_texts
from pioneer_grpc.service.context import ServiceContext
from pioneer_grpc.v1 import prompt_pb2

# Inputs up to this size are looked up in the compile cache on the event loop.
INLINE_HIT_BYTES = 64 * 1024


async def compile_prompt(
    ctx: ServiceContext,
    compile_input: prompt_pb2.PromptCompileInput,
    payload: prompt_pb2.CompiledPromptPayload,
    thread_id: str = "",
    turn_id: str = "",
) -> int:
    """Fills `payload`; with a thread and turn, records the manifest and returns its event id (else 0)."""
    if bool(thread_id) != bool(turn_id):
        missing = "turn_id" if thread_id else "thread_id"
        raise InvalidArgument.field(missing, "thread_id and turn_id are set together or not at all")
    if thread_id:
        InvalidArgument.raise_if([id_violation("thread_id", thread_id), id_violation("turn_id", turn_id)])
        observe.turn_started(ctx, thread_id, turn_id)
    with ctx.telemetry.span("pioneer.compile") as span:
        cache = ctx.compile_cache
        ids = {"thread_id": thread_id, "turn_id": turn_id}
        # A small input found in the cache costs a few lstat calls and a copy: no thread hop.
        hit = compile_input.ByteSize() <= INLINE_HIT_BYTES and cache.cached_into(
            payload, compile_input, ctx.config.homes, **ids
        )
        if not hit:
            hit = await asyncio.to_thread(cache.compile_into, payload, compile_input, ctx.config.homes, **ids)
        observe.compiled(ctx, span, hit, payload.manifest)
    if not thread_id:
        return 0
    event_id = await observe.record_manifest(ctx, thread_id, turn_id, payload.manifest)
    await section_texts.keep(ctx, thread_id, payload.sections)
    return event_id


async def ensure_bootstrap(ctx: ServiceContext, workspace_root: str) -> list[tuple[str, Path, bool]]:
    """(name, path, created) for SOUL.md and IDENTITY.md in a workspace inside the runtime homes."""
    InvalidArgument.raise_if([text_violation("workspace_root", workspace_root, PATH)])
    return await asyncio.to_thread(_ensure_in, workspace_root, ctx.config.homes)


def _ensure_in(workspace_root: str, homes: list[Path]) -> list[tuple[str, Path, bool]]:
    resolved = resolve_homes(homes, FsView())
    folder = resolve_workspace_root(workspace_root, resolved, field="workspace_root")
    try:
        return ensure_bootstrap_files(folder, resolved.roots)
    except OSError as exc:
        raise workspace_error(exc) from None


def workspace_error(exc: OSError) -> InvalidArgument | FailedPrecondition:
    """What a filesystem error of the request's folder means to the caller: never a database failure.

    A name too long for the filesystem is the request's fault; anything else is
    the folder's state, which the caller (or an operator) must change first.
    """
    name = errno.errorcode.get(exc.errno or 0, type(exc).__name__)
    if exc.errno == errno.ENAMETOOLONG:
        return InvalidArgument.field(
            "workspace_root", f"a name in the path is too long for the filesystem ({name})"
        )
    what = {
        errno.EEXIST: "a file, not a folder, is at the path or above it",
        errno.ENOTDIR: "a file, not a folder, is at the path or above it",
        errno.EACCES: "the server may not write there",
        errno.EPERM: "the server may not write there",
        errno.EROFS: "the filesystem is read-only",
        errno.ENOSPC: "the filesystem is full",
        errno.EDQUOT: "the disk quota is exhausted",
    }.get(exc.errno or 0, "the folder cannot be used")
    return FailedPrecondition(
        f"workspace_root cannot hold the bootstrap files: {what} ({name})",
        reason=reasons.WORKSPACE_UNUSABLE,
        metadata={"errno": name},
    )
