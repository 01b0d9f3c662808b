"""Assemble the payload: both halves, the full text, fingerprints and the manifest."""

from __future__ import annotations

import pioneer_grpc
from pioneer_grpc.compiler.boundary import CACHE_BOUNDARY, join_halves
from pioneer_grpc.compiler.diagnostics import CompileLog
from pioneer_grpc.compiler.sections import fingerprint, render_half, render_section
from pioneer_grpc.v1 import prompt_pb2


def build_payload(
    stable: list[prompt_pb2.PromptSection],
    dynamic: list[prompt_pb2.PromptSection],
    profile: prompt_pb2.PromptProfile,
    log: CompileLog,
    extra_hook_sources: list[prompt_pb2.HookSource],
    thread_id: str = "",
    turn_id: str = "",
) -> prompt_pb2.CompiledPromptPayload:
    stable_text = render_half(stable)
    dynamic_text = render_half(dynamic)
    full_text = join_halves(stable_text, dynamic_text)
    sections = [*stable, *dynamic]
    # Filled in place: building the parts first and passing them in would copy each one again.
    payload = prompt_pb2.CompiledPromptPayload(
        stable_system_text=stable_text,
        dynamic_system_text=dynamic_text,
        full_system_text=full_text,
        boundary_marker=CACHE_BOUNDARY,
    )
    payload.sections.extend(sections)
    manifest = payload.manifest
    manifest.SetInParent()
    manifest.compiler_version = pioneer_grpc.__version__
    manifest.profile = profile
    manifest.section_ids.extend(s.id for s in sections)
    manifest.fingerprint_stable = fingerprint(stable_text)
    manifest.fingerprint_dynamic = fingerprint(dynamic_text)
    manifest.fingerprint_full = fingerprint(full_text)
    for s in sections:
        manifest.section_fingerprints.add(
            section_id=s.id, stability=s.stability, fingerprint=s.fingerprint, chars=len(render_section(s))
        )
    manifest.diagnostics.extend(log.diagnostics)
    manifest.hook_sources.extend(log.hook_sources)
    manifest.hook_sources.extend(extra_hook_sources)
    manifest.source_manifest.extend(log.source_manifest)
    manifest.thread_id = thread_id
    manifest.turn_id = turn_id
    return payload
