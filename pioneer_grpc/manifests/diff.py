"""Compare two prompt manifests section by section and name what broke the prefix cache.

Pure: takes and returns pioneer.v1 messages; no grpc, no database.

A section is ADDED or REMOVED when its id is on one side only, CHANGED when its
fingerprint differs, and MOVED when it kept its fingerprint but crossed the cache
boundary or left the relative order of the sections both sides share (the
longest common subsequence stays put, so one insertion does not "move" the rest).
"""

from __future__ import annotations

import bisect
from collections import Counter
from dataclasses import dataclass

from pioneer_grpc.v1 import manifest_service_pb2 as service_pb2
from pioneer_grpc.v1 import prompt_pb2

STABLE = prompt_pb2.SECTION_STABILITY_STABLE
DYNAMIC = prompt_pb2.SECTION_STABILITY_DYNAMIC
Kind = service_pb2.SectionChangeKind


@dataclass(frozen=True)
class _Section:
    id: str
    stability: int
    fingerprint: str


def _sections(manifest: prompt_pb2.PromptManifest) -> list[_Section]:
    """The manifest's sections in prompt order, first occurrence of each id."""
    if manifest.section_fingerprints:
        found = [_Section(s.section_id, s.stability, s.fingerprint) for s in manifest.section_fingerprints]
    else:
        found = [_Section(sid, prompt_pb2.SECTION_STABILITY_UNSPECIFIED, "") for sid in manifest.section_ids]
    seen: set[str] = set()
    unique = []
    for section in found:
        if section.id not in seen:
            seen.add(section.id)
            unique.append(section)
    return unique


def _kept_in_order(base_ids: list[str], target_ids: list[str]) -> set[str]:
    """The shared ids that stay put: a longest common subsequence of the two orders.

    Both lists hold the same ids, each once, so the longest common subsequence is
    the longest increasing run of base positions taken in target order: found in
    O(n log n) time and O(n) memory (patience sorting). Ties go to the sections
    earliest in the target, so in a swap the one that now comes first stays.
    """
    position = {section_id: i for i, section_id in enumerate(base_ids)}
    # Walk the target backwards looking for a decreasing run, i.e. an increasing run read forwards.
    keys = [-position[section_id] for section_id in reversed(target_ids)]
    tails: list[int] = []  # tails[k]: index in keys of the smallest tail of a run of length k + 1
    previous = [-1] * len(keys)
    for index, key in enumerate(keys):
        length = bisect.bisect_left(tails, key, key=keys.__getitem__)
        previous[index] = tails[length - 1] if length else -1
        if length == len(tails):
            tails.append(index)
        else:
            tails[length] = index
    kept: set[str] = set()
    index = tails[-1] if tails else -1
    while index >= 0:
        kept.add(target_ids[len(keys) - 1 - index])
        index = previous[index]
    return kept


def _changes(base: list[_Section], target: list[_Section]) -> list[service_pb2.SectionChange]:
    """Changes in target order, then removed sections in base order."""
    base_by_id = {s.id: s for s in base}
    target_ids = {s.id for s in target}
    shared = [s.id for s in target if s.id in base_by_id]
    in_order = _kept_in_order([s.id for s in base if s.id in target_ids], shared)
    changes = []
    for section in target:
        before = base_by_id.get(section.id)
        if before is None:
            kind = Kind.SECTION_CHANGE_KIND_ADDED
        elif before.fingerprint != section.fingerprint:
            kind = Kind.SECTION_CHANGE_KIND_CHANGED
        elif before.stability != section.stability or section.id not in in_order:
            kind = Kind.SECTION_CHANGE_KIND_MOVED
        else:
            continue
        changes.append(
            service_pb2.SectionChange(
                section_id=section.id,
                kind=kind,
                stability=section.stability,  # type: ignore[arg-type]
                base_fingerprint=before.fingerprint if before else "",
                target_fingerprint=section.fingerprint,
            )
        )
    for section in base:
        if section.id not in target_ids:
            changes.append(
                service_pb2.SectionChange(
                    section_id=section.id,
                    kind=Kind.SECTION_CHANGE_KIND_REMOVED,
                    stability=section.stability,  # type: ignore[arg-type]
                    base_fingerprint=section.fingerprint,
                )
            )
    return changes


def _cache_break(base: list[_Section], target: list[_Section], changed_in_target: set[str]) -> str:
    """The section at the first position where the stable halves diverge."""
    base_stable = [s for s in base if s.stability == STABLE]
    target_stable = [s for s in target if s.stability == STABLE]
    for i in range(max(len(base_stable), len(target_stable))):
        before = base_stable[i] if i < len(base_stable) else None
        after = target_stable[i] if i < len(target_stable) else None
        if before is not None and after is not None and before == after:
            continue
        if after is not None and (after.id in changed_in_target or before is None):
            return after.id
        assert before is not None
        return before.id
    return ""


def _half_changed(base_fingerprint: str, target_fingerprint: str, section_changed: bool) -> bool:
    if base_fingerprint or target_fingerprint:
        return base_fingerprint != target_fingerprint
    return section_changed


def _new_diagnostics(
    base: prompt_pb2.PromptManifest, target: prompt_pb2.PromptManifest
) -> list[prompt_pb2.PromptDiagnostic]:
    """Target diagnostics beyond those base already had (counted, so a repeat is new)."""
    remaining = Counter(d.SerializeToString(deterministic=True) for d in base.diagnostics)
    new = []
    for diagnostic in target.diagnostics:
        key = diagnostic.SerializeToString(deterministic=True)
        if remaining[key] > 0:
            remaining[key] -= 1
        else:
            new.append(diagnostic)
    return new


def diff_manifests(
    base: prompt_pb2.PromptManifest, target: prompt_pb2.PromptManifest
) -> service_pb2.DiffManifestsResponse:
    base_sections, target_sections = _sections(base), _sections(target)
    changes = _changes(base_sections, target_sections)
    base_stability = {s.id: s.stability for s in base_sections}
    halves_touched = {c.stability for c in changes} | {
        base_stability[c.section_id]
        for c in changes
        if c.kind in (Kind.SECTION_CHANGE_KIND_CHANGED, Kind.SECTION_CHANGE_KIND_MOVED)
    }
    stable_changed = _half_changed(
        base.fingerprint_stable, target.fingerprint_stable, STABLE in halves_touched
    )
    dynamic_changed = _half_changed(
        base.fingerprint_dynamic, target.fingerprint_dynamic, DYNAMIC in halves_touched
    )
    full_changed = _half_changed(base.fingerprint_full, target.fingerprint_full, bool(changes))
    changed_in_target = {c.section_id for c in changes if c.kind != Kind.SECTION_CHANGE_KIND_REMOVED}
    cache_break = _cache_break(base_sections, target_sections, changed_in_target) if stable_changed else ""
    return service_pb2.DiffManifestsResponse(
        changes=changes,
        stable_changed=stable_changed,
        dynamic_changed=dynamic_changed,
        full_changed=full_changed,
        cache_break_section_id=cache_break,
        new_diagnostics=_new_diagnostics(base, target),
    )
