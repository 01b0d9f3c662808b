"""Run `pioneer-grpc serve` with a sampler thread that says where its memory is, for soaks.

    PIONEER_PROBE_LOG=/tmp/probe.log .venv/bin/python scripts/memory_probe.py serve [serve flags]
    .venv/bin/python scripts/soak.py --seconds 600 --backends sqlite --probe /tmp/probe.log

Every PIONEER_PROBE_EVERY seconds (default 10) one line: the process's RSS;
glibc's malloc totals (mallinfo2, all arenas: obtained from the system, in use,
free inside them, mapped apart); Python's allocated blocks and gc counts; and the
service's caches (kept history loads and their bytes, compiled prompts, observers'
pending events). Each full (generation 2) collection is logged with what it
freed and how long it took. RSS that saws while "in use" saws with it is Python
garbage freed late (reference cycles); RSS that saws while "in use" stays flat is
the allocator.

PIONEER_PROBE_TRACEMALLOC=N (N > 0) also traces allocations and logs, every
minute, the N source lines whose allocations grew most since the minute before.
Tracing makes the server several times slower.
"""

from __future__ import annotations

import ctypes
import gc
import os
import sys
import threading
import time
import tracemalloc
from typing import Any, TextIO

MB = 1024 * 1024


class MallInfo2(ctypes.Structure):
    _fields_ = [
        (name, ctypes.c_size_t)
        for name in (
            "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks",
            "keepcost",
        )
    ]  # fmt: skip


def _mallinfo() -> str:
    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.mallinfo2.restype = MallInfo2
        info = libc.mallinfo2()
    except (OSError, AttributeError):
        return "malloc ?"
    return (
        f"malloc {info.arena / MB:.1f} in_use {info.uordblks / MB:.1f} "
        f"free {info.fordblks / MB:.1f} mapped {info.hblkhd / MB:.1f}"
    )


def _rss() -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


class Probe:
    def __init__(self, log: TextIO, every: float, trace_lines: int) -> None:
        self.log = log
        self.every = every
        self.trace_lines = trace_lines
        self.contexts: list[Any] = []
        self.started = time.monotonic()
        self._gc_started = 0.0

    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def on_gc(self, phase: str, info: dict[str, int]) -> None:
        if info["generation"] != 2:
            return
        if phase == "start":
            self._gc_started = time.perf_counter()
            return
        took = (time.perf_counter() - self._gc_started) * 1000
        self.log.write(
            f"{self.elapsed():7.0f} full collection: freed {info['collected']} objects in {took:.0f} ms,"
            f" rss {_rss():.1f}\n"
        )

    def caches(self) -> str:
        try:
            return self._caches()
        except Exception as error:  # read from another thread: a probe must not stop for a race
            return f"caches ? ({error!r})"

    def _caches(self) -> str:
        parts = []
        for ctx in self.contexts:
            loads = ctx.load_cache
            parts.append(
                f"loads {len(loads)} ({loads.size_bytes / MB:.1f} MB) compiled {len(ctx.compile_cache)}"
                f" observers {ctx.hub.observer_count} pending {sum(ctx.hub.observer_lags())}"
            )
        return " ".join(parts)

    def sample(self) -> None:
        snapshot = None
        last_trace = time.monotonic()
        while True:
            time.sleep(self.every)
            self.log.write(
                f"{self.elapsed():7.0f} rss {_rss():.1f} {_mallinfo()} py_blocks {sys.getallocatedblocks()}"
                f" gc {gc.get_count()} {self.caches()}\n"
            )
            if self.trace_lines and time.monotonic() - last_trace >= 60:
                last_trace = time.monotonic()
                now = tracemalloc.take_snapshot()
                if snapshot is not None:
                    for stat in now.compare_to(snapshot, "lineno")[: self.trace_lines]:
                        self.log.write(f"        {stat}\n")
                snapshot = now


def main() -> int:
    log = open(os.environ.get("PIONEER_PROBE_LOG", "memory_probe.log"), "a", buffering=1)
    probe = Probe(
        log,
        float(os.environ.get("PIONEER_PROBE_EVERY", "10")),
        int(os.environ.get("PIONEER_PROBE_TRACEMALLOC", "0")),
    )
    if probe.trace_lines:
        tracemalloc.start()
    gc.callbacks.append(probe.on_gc)

    from pioneer_grpc.service import context

    built = context.ServiceContext.__post_init__

    def remembered(ctx: context.ServiceContext) -> None:
        built(ctx)
        probe.contexts.append(ctx)

    context.ServiceContext.__post_init__ = remembered  # type: ignore[method-assign]
    threading.Thread(target=probe.sample, name="memory-probe", daemon=True).start()

    from pioneer_grpc.cli import main as serve

    sys.argv = ["pioneer-grpc", *sys.argv[1:]]
    return serve()


if __name__ == "__main__":
    sys.exit(main())
