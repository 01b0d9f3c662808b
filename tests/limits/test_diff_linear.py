"""DiffManifests grows linearly with the manifests (measured in bytes allocated, not in time).

Before, a longest common subsequence table of n x m cells made 100,000-section
inline manifests grow the server to 23 GB. The RPC caps manifests at
MAX_MANIFEST_SECTIONS sections; the pure diff stays linear past that anyway.
"""

from __future__ import annotations

import random
import tracemalloc

from pioneer_grpc.manifests.diff import diff_manifests
from pioneer_grpc.v1 import prompt_pb2

STABLE = prompt_pb2.SECTION_STABILITY_STABLE


def _pair(n: int) -> tuple[prompt_pb2.PromptManifest, prompt_pb2.PromptManifest]:
    rng = random.Random(n)
    ids = [f"section{i}" for i in range(n)]
    shuffled = ids[:]
    rng.shuffle(shuffled)  # the worst case for ordering: almost everything moves

    def manifest(order: list[str], fingerprint: str) -> prompt_pb2.PromptManifest:
        return prompt_pb2.PromptManifest(
            section_fingerprints=[
                prompt_pb2.SectionFingerprint(section_id=s, stability=STABLE, fingerprint=fingerprint)
                for s in order
            ]
        )

    return manifest(ids, "f"), manifest(shuffled, "f")


def _peak_bytes(n: int) -> int:
    base, target = _pair(n)
    tracemalloc.start()
    try:
        result = diff_manifests(base, target)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(result.changes) <= n
    return peak


def test_diff_memory_grows_linearly() -> None:
    small, large = _peak_bytes(2_000), _peak_bytes(8_000)
    # 4x the sections: linear work allocates about 4x; the old n x m table allocated 16x.
    assert large < small * 6, (small, large)


def test_a_shuffle_keeps_a_longest_increasing_run_in_place() -> None:
    base, target = _pair(5_000)
    result = diff_manifests(base, target)
    moved = {c.section_id for c in result.changes}
    kept = [s.section_id for s in target.section_fingerprints if s.section_id not in moved]
    positions = {s.section_id: i for i, s in enumerate(base.section_fingerprints)}
    assert [positions[s] for s in kept] == sorted(positions[s] for s in kept)
    # A random permutation of n has an increasing run of about 2 * sqrt(n) (~141 here).
    assert len(kept) > 100
