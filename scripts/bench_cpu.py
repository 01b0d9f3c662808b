"""CPU time by process during a load run, from /proc: where each call's CPU went.

On a machine shared by the server, its database and the load generator, a
throughput figure alone does not say what bounds it. `CpuWindow` snapshots the
CPU time of the server's processes (the given pid and its descendants), of
PostgreSQL's and of the load generator, and the machine's busy time; the
difference over the measured window, divided by the calls, is each one's CPU
per call. Linux only (it reads /proc).
"""

from __future__ import annotations

import os
from collections import defaultdict
from dataclasses import dataclass

_TICK = os.sysconf("SC_CLK_TCK")


def _stat(pid: str) -> tuple[str, int, float] | None:
    """(command name, parent pid, CPU seconds) of a process, None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            text = f.read()
    except OSError:
        return None
    name = text[text.index("(") + 1 : text.rindex(")")]
    fields = text[text.rindex(")") + 2 :].split()
    return name, int(fields[1]), (int(fields[11]) + int(fields[12])) / _TICK


# CPU seconds by (role, pid), and the machine's busy seconds.
Spent = tuple[dict[tuple[str, int], float], float]


def _busy_seconds() -> float:
    with open("/proc/stat") as f:
        ticks = [int(t) for t in f.readline().split()[1:9]]  # user .. steal (guest is in user)
    return (sum(ticks) - ticks[3] - ticks[4]) / _TICK  # less idle and iowait


def snapshot(server_pid: int, loader_pid: int) -> Spent:
    """CPU seconds per (role, pid) now, and the machine's busy seconds."""
    procs: dict[int, tuple[str, int, float]] = {}
    for pid in os.listdir("/proc"):
        if pid.isdigit() and (found := _stat(pid)) is not None:
            procs[int(pid)] = found

    def role(pid: int) -> str:
        seen = pid
        while seen > 1:
            if seen == server_pid:
                return "server"
            if seen == loader_pid:
                return "loader"
            seen = procs[seen][1] if seen in procs else 0
        return "postgres" if procs[pid][0].startswith("postgres") else "other"

    return {(role(pid), pid): cpu for pid, (_, _, cpu) in procs.items()}, _busy_seconds()


@dataclass
class CpuWindow:
    server_pid: int
    loader_pid: int
    start: Spent | None = None

    def begin(self) -> None:
        self.start = snapshot(self.server_pid, self.loader_pid)

    def finish(self) -> dict[str, float]:
        """CPU seconds of each role since `begin`, and the machine's busy seconds ("busy")."""
        assert self.start is not None
        (before, busy_before), (after, busy_after) = self.start, snapshot(self.server_pid, self.loader_pid)
        spent: defaultdict[str, float] = defaultdict(float)
        for (role, pid), cpu in after.items():
            spent[role] += cpu - before.get((role, pid), 0.0)  # a process started within counts whole
        return {**spent, "busy": busy_after - busy_before}

    @staticmethod
    def per_call_ms(spent: dict[str, float], calls: int, seconds: float) -> dict[str, float]:
        """Each role's CPU ms per call, and the cores the machine kept busy."""
        figures = {
            f"cpu_ms_per_call_{role}": round(1000 * cpu / calls, 3)
            for role, cpu in sorted(spent.items())
            if role != "busy"
        }
        figures["busy_cores"] = round(spent["busy"] / seconds, 2)
        return figures
