"""How the supervisor words a worker's end, and how long it waits before starting it again."""

from __future__ import annotations

import signal

from pioneer_grpc.server.workers import RESTART_BACKOFF_MAX_SECONDS, how_it_ended, restart_delay


def test_a_worker_dying_soon_after_each_start_waits_longer_each_time():
    delays = [restart_delay(n) for n in range(0, 10)]
    # 0: it had served a while; 1: its first quick death. Then doubling, up to the cap.
    assert delays == [0.0, 0.0, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 30.0, 30.0]
    assert restart_delay(1000) == RESTART_BACKOFF_MAX_SECONDS


def test_the_log_names_the_signal_or_the_exit_code():
    assert how_it_ended(-signal.SIGKILL) == "killed by SIGKILL"
    assert how_it_ended(-signal.SIGSEGV) == "killed by SIGSEGV"
    assert how_it_ended(1) == "exited with code 1"
    assert how_it_ended(0) == "exited with code 0"
