"""The pure manifest diff on hand-made pairs."""

from __future__ import annotations

from pioneer_grpc.manifests.diff import diff_manifests
from pioneer_grpc.v1 import manifest_service_pb2 as service_pb2
from tests.events.helpers import DYNAMIC, STABLE, manifest

Kind = service_pb2.SectionChangeKind
BASE = [
    ("identity", STABLE, "you are pioneer"),
    ("safety", STABLE, "be careful"),
    ("soul", STABLE, "SOUL.md text"),
    ("skills", DYNAMIC, "skill list"),
    ("dynamic_context", DYNAMIC, "round 1"),
]


def changes(response: service_pb2.DiffManifestsResponse) -> list[tuple[str, str, str]]:
    return [
        (c.section_id, Kind.Name(c.kind).removeprefix("SECTION_CHANGE_KIND_"), "SD"[c.stability - 1])
        for c in response.changes
    ]


def test_identical_manifests_have_no_changes() -> None:
    result = diff_manifests(manifest(BASE), manifest(BASE))
    assert list(result.changes) == []
    assert (result.stable_changed, result.dynamic_changed, result.full_changed) == (False, False, False)
    assert result.cache_break_section_id == ""
    assert list(result.new_diagnostics) == []


def test_stable_change_names_the_first_changed_stable_section() -> None:
    target = list(BASE)
    target[1] = ("safety", STABLE, "be very careful")
    target[2] = ("soul", STABLE, "SOUL.md edited")
    result = diff_manifests(manifest(BASE), manifest(target))
    assert changes(result) == [("safety", "CHANGED", "S"), ("soul", "CHANGED", "S")]
    assert (result.stable_changed, result.dynamic_changed, result.full_changed) == (True, False, True)
    assert result.cache_break_section_id == "safety"
    change = result.changes[0]
    assert change.base_fingerprint == manifest(BASE).section_fingerprints[1].fingerprint
    assert change.target_fingerprint == manifest(target).section_fingerprints[1].fingerprint


def test_dynamic_only_change_keeps_the_cache() -> None:
    target = [*BASE[:4], ("dynamic_context", DYNAMIC, "round 2")]
    result = diff_manifests(manifest(BASE), manifest(target))
    assert changes(result) == [("dynamic_context", "CHANGED", "D")]
    assert (result.stable_changed, result.dynamic_changed, result.full_changed) == (False, True, True)
    assert result.cache_break_section_id == ""


def test_added_and_removed_sections() -> None:
    target = [
        ("identity", STABLE, "you are pioneer"),
        ("soul", STABLE, "SOUL.md text"),
        ("user", STABLE, "USER.md text"),
        ("skills", DYNAMIC, "skill list"),
        ("dynamic_context", DYNAMIC, "round 1"),
        ("memory_recall", DYNAMIC, "memory"),
    ]
    result = diff_manifests(manifest(BASE), manifest(target))
    assert changes(result) == [
        ("user", "ADDED", "S"),
        ("memory_recall", "ADDED", "D"),
        ("safety", "REMOVED", "S"),
    ]
    assert (result.stable_changed, result.dynamic_changed) == (True, True)
    # Position 1 of the stable half held `safety`; it is gone, so that is where the prefix broke.
    assert result.cache_break_section_id == "safety"
    added = result.changes[0]
    assert added.base_fingerprint == ""
    assert added.target_fingerprint != ""


def test_added_stable_section_at_the_end_breaks_the_cache_there() -> None:
    target = [*BASE[:3], ("user", STABLE, "USER.md text"), *BASE[3:]]
    result = diff_manifests(manifest(BASE), manifest(target))
    assert changes(result) == [("user", "ADDED", "S")]
    assert result.cache_break_section_id == "user"


def test_moved_section_is_one_move_not_a_shift_of_everything() -> None:
    target = [BASE[1], BASE[2], BASE[0], BASE[3], BASE[4]]
    result = diff_manifests(manifest(BASE), manifest(target))
    assert changes(result) == [("identity", "MOVED", "S")]
    assert result.changes[0].base_fingerprint == result.changes[0].target_fingerprint
    assert result.stable_changed is True
    assert result.dynamic_changed is False
    # The stable prefix diverges at position 0, where `safety` now stands but `identity` moved away.
    assert result.cache_break_section_id == "identity"


def test_section_crossing_the_boundary_is_moved_to_the_other_half() -> None:
    target = [BASE[0], BASE[1], BASE[3], ("soul", DYNAMIC, "SOUL.md text"), BASE[4]]
    result = diff_manifests(manifest(BASE), manifest(target))
    assert changes(result) == [("soul", "MOVED", "D")]
    assert result.cache_break_section_id == "soul"


def test_new_diagnostics_are_those_beyond_the_base() -> None:
    base = manifest(BASE, diagnostics=[("missing_file", "USER.md missing")])
    target = manifest(
        BASE,
        diagnostics=[
            ("missing_file", "USER.md missing"),
            ("file_truncated", "SOUL.md cut at 20000"),
            ("missing_file", "USER.md missing"),
        ],
    )
    result = diff_manifests(base, target)
    assert [(d.code, d.message) for d in result.new_diagnostics] == [
        ("file_truncated", "SOUL.md cut at 20000"),
        ("missing_file", "USER.md missing"),
    ]
    assert list(result.changes) == []


def test_manifests_without_section_fingerprints_compare_by_ids() -> None:
    from pioneer_grpc.v1 import prompt_pb2

    base = prompt_pb2.PromptManifest(section_ids=["a", "b", "c"])
    target = prompt_pb2.PromptManifest(section_ids=["a", "c", "d"])
    result = diff_manifests(base, target)
    assert [(c.section_id, Kind.Name(c.kind)) for c in result.changes] == [
        ("d", "SECTION_CHANGE_KIND_ADDED"),
        ("b", "SECTION_CHANGE_KIND_REMOVED"),
    ]
    assert result.full_changed is True
    assert result.cache_break_section_id == ""
