"""`pioneer-grpc watch --stats`: per thread, its rounds and prompt-cache breaks, by the section that broke.

Each manifest event is a round of its thread. A round whose stable fingerprint
differs from the thread's previous round broke the provider's prefix cache; it
is labelled with the first changed stable section (the DiffManifests rule).
The first round seen of a thread has nothing to compare with: it counts as a
round, neither a hit nor a break.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field

from pioneer_grpc.telemetry.cache_breaks import CacheBreakTracker
from pioneer_grpc.v1 import manifest_service_pb2 as service_pb2

# The watch keeps every thread it sees (it is one person's terminal, not a server).
MAX_THREADS = 1_000_000


@dataclass
class ThreadStats:
    rounds: int = 0
    breaks: Counter[str] = field(default_factory=Counter)

    @property
    def break_count(self) -> int:
        return sum(self.breaks.values())


class WatchStats:
    def __init__(self) -> None:
        self.threads: dict[str, ThreadStats] = {}
        self._tracker = CacheBreakTracker(MAX_THREADS)

    def add(self, event: service_pb2.ManifestEvent) -> str:
        """Counts the round; returns how it went: `first`, `kept` or `break:<section id>`."""
        stats = self.threads.setdefault(event.thread_id, ThreadStats())
        stats.rounds += 1
        observed = self._tracker.observe(event.thread_id, event.manifest)
        if observed.first:
            return "first"
        if not observed.break_section_id:
            return "kept"
        stats.breaks[observed.break_section_id] += 1
        return f"break:{observed.break_section_id}"

    def line(self, event: service_pb2.ManifestEvent) -> str:
        outcome = self.add(event)
        stats = self.threads[event.thread_id]
        return (
            f"#{event.event_id} thread={event.thread_id} turn={event.turn_id} round={stats.rounds}"
            f" cache={outcome} breaks={stats.break_count}"
        )

    def json_line(self, event: service_pb2.ManifestEvent) -> str:
        outcome = self.add(event)
        stats = self.threads[event.thread_id]
        return json.dumps(
            {
                "event_id": event.event_id,
                "thread_id": event.thread_id,
                "turn_id": event.turn_id,
                "round": stats.rounds,
                "cache": outcome,
                "cache_breaks": stats.break_count,
            },
            separators=(",", ":"),
        )

    def table(self) -> str:
        """One row per thread: rounds, breaks, and the breaks by section (most first)."""
        rows = [("thread", "rounds", "breaks", "by section")]
        for thread_id in sorted(self.threads):
            stats = self.threads[thread_id]
            by_section = " ".join(f"{s}={n}" for s, n in stats.breaks.most_common()) or "-"
            rows.append((thread_id, str(stats.rounds), str(stats.break_count), by_section))
        width = max(len(row[0]) for row in rows)
        return "\n".join(f"{t:<{width}}  {r:>6}  {b:>6}  {s}" for t, r, b, s in rows)

    def json_table(self) -> str:
        return "\n".join(
            json.dumps(
                {
                    "thread_id": thread_id,
                    "rounds": stats.rounds,
                    "cache_breaks": stats.break_count,
                    "by_section": dict(stats.breaks.most_common()),
                },
                separators=(",", ":"),
            )
            for thread_id, stats in sorted(self.threads.items())
        )
