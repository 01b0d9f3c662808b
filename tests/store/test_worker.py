"""The SQLite thread's plain worker (store/worker.py): jobs in order on one thread, a raising job
logged and the thread going on, stop running what was put before it."""

from __future__ import annotations

import logging
import threading

import pytest

from pioneer_grpc.store.worker import Worker


def test_jobs_run_in_order_on_one_thread_and_stop_runs_those_put_before_it():
    worker = Worker("test-worker")
    release = threading.Event()
    ran: list[tuple[int, str]] = []
    worker.put(lambda: release.wait(30))  # every job below is queued behind this one
    for n in range(5):
        worker.put(lambda n=n: ran.append((n, threading.current_thread().name)))
    release.set()
    worker.stop()
    assert ran == [(n, "test-worker") for n in range(5)]
    with pytest.raises(RuntimeError):
        worker.put(lambda: None)
    worker.stop()  # again: nothing


def test_a_raising_job_is_logged_and_the_thread_goes_on(caplog):
    worker = Worker("test-worker")
    ran: list[int] = []

    def fails() -> None:
        raise ValueError("a bug")

    with caplog.at_level(logging.ERROR, logger="pioneer_grpc.store.worker"):
        worker.put(fails)
        worker.put(lambda: ran.append(1))
        worker.stop()
    assert ran == [1]
    assert "a job of thread test-worker raised" in caplog.text
