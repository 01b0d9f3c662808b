"""A plain thread running what it is given, in order: the SQLite thread and its helper.

A ThreadPoolExecutor of one worker costs a Future, a work item and their locks
per job, on the event loop and in the thread; the SQLite thread is handed a job
per unit of work and per read, so it is a thread reading a queue instead. A job
answers its caller itself (call_soon_threadsafe) and must not raise.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable

log = logging.getLogger(__name__)


class Worker:
    def __init__(self, name: str) -> None:
        self._jobs: queue.SimpleQueue[Callable[[], object] | None] = queue.SimpleQueue()
        self._stopped = False
        # A daemon: a store never closed does not hold the process at exit (SQLite survives that).
        self._thread = threading.Thread(target=self._serve, name=name, daemon=True)
        self._thread.start()

    def put(self, job: Callable[[], object]) -> None:
        """`job` runs after every job put before it. RuntimeError once stopped, as an executor's."""
        if self._stopped:
            raise RuntimeError("cannot run new work after the worker stopped")
        self._jobs.put(job)

    def stop(self) -> None:
        """Runs the jobs already put, then ends the thread and waits for it; again, it does nothing."""
        if not self._stopped:
            self._stopped = True
            self._jobs.put(None)
        self._thread.join()

    def _serve(self) -> None:
        while (job := self._jobs.get()) is not None:
            try:
                job()
            except BaseException:  # a job answers its own caller; this is a bug, and the thread goes on
                log.exception("a job of thread %s raised", self._thread.name)
