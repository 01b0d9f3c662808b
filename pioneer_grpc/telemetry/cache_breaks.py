"""Per thread, the previous round's stable half, to name the section that broke the prompt cache.

A round is one manifest recorded on a thread. When its stable fingerprint
differs from the thread's previous round, the provider's prefix cache cannot
hit: the break is labelled with the first stable section that changed, by the
same rule as DiffManifests (manifests/diff.py). Memory is bounded: the least
recently seen thread is forgotten first (its next round counts as a first one).

One tracker per server process: rounds of a thread served by another replica
are not seen here.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

from pioneer_grpc.manifests.diff import diff_manifests
from pioneer_grpc.v1 import prompt_pb2

MAX_THREADS = 10_000
# When the fingerprints differ but no stable section explains it (say, a manifest without sections).
UNKNOWN_SECTION = "unknown"

_Sections = tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class Round:
    # No previous round of this thread was known.
    first: bool
    # The stable section that broke the cache; empty when the stable half is unchanged.
    break_section_id: str


@dataclass(frozen=True)
class _Stable:
    fingerprint: str
    sections: _Sections


def _stable_of(manifest: prompt_pb2.PromptManifest) -> _Stable:
    sections = tuple(
        (s.section_id, s.fingerprint)
        for s in manifest.section_fingerprints
        if s.stability == prompt_pb2.SECTION_STABILITY_STABLE
    )
    return _Stable(manifest.fingerprint_stable, sections)


def _as_manifest(stable: _Stable) -> prompt_pb2.PromptManifest:
    return prompt_pb2.PromptManifest(
        fingerprint_stable=stable.fingerprint,
        section_fingerprints=[
            prompt_pb2.SectionFingerprint(
                section_id=section_id, stability=prompt_pb2.SECTION_STABILITY_STABLE, fingerprint=fingerprint
            )
            for section_id, fingerprint in stable.sections
        ],
    )


def break_section(before: _Stable, after: _Stable) -> str:
    if before.fingerprint == after.fingerprint:
        return ""
    section = diff_manifests(_as_manifest(before), _as_manifest(after)).cache_break_section_id
    return section or UNKNOWN_SECTION


class CacheBreakTracker:
    def __init__(self, max_threads: int = MAX_THREADS) -> None:
        self.max_threads = max_threads
        self._threads: OrderedDict[str, _Stable] = OrderedDict()

    def __len__(self) -> int:
        return len(self._threads)

    def observe(self, thread_id: str, manifest: prompt_pb2.PromptManifest) -> Round:
        current = _stable_of(manifest)
        previous = self._threads.pop(thread_id, None)
        self._threads[thread_id] = current
        while len(self._threads) > self.max_threads:
            self._threads.popitem(last=False)
        if previous is None:
            return Round(first=True, break_section_id="")
        return Round(first=False, break_section_id=break_section(previous, current))
