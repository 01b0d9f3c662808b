"""In-process fan-out of manifest events to live observers.

One reader task per server reads new rows (id > the last one it dispatched) in id
order whenever it is poked: by the local recorder after a commit, by the
PostgreSQL listener when another replica commits, and by a slow periodic poll as
a safety net. A poke carries at most an id, used only to skip a read when that id
was already dispatched; the events themselves always come from the table.

Each observer has a bounded subscription. The hub never waits for an observer:
when a subscription is full it is marked overflowed and dropped, and its stream
ends telling the observer to resume from its last id.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque

from sqlalchemy.ext.asyncio import AsyncEngine

from pioneer_grpc.events.queries import events_after, newest_event_id
from pioneer_grpc.v1 import manifest_service_pb2 as service_pb2

log = logging.getLogger(__name__)


class SubscriptionOverflow(Exception):
    """The observer fell more than its queue size behind."""


class SubscriptionClosed(Exception):
    """The hub is shutting down."""


class Subscription:
    def __init__(self, thread_id: str, capacity: int) -> None:
        self.thread_id = thread_id
        self.capacity = capacity
        self.overflowed = False
        self.closed = False
        self._events: deque[service_pb2.ManifestEvent] = deque()
        self._ready = asyncio.Event()

    def wants(self, event: service_pb2.ManifestEvent) -> bool:
        return not self.thread_id or event.thread_id == self.thread_id

    @property
    def pending(self) -> int:
        return len(self._events)

    def offer(self, event: service_pb2.ManifestEvent) -> None:
        if self.overflowed or self.closed:
            return
        if len(self._events) >= self.capacity:
            self.overflowed = True
        else:
            self._events.append(event)
        self._ready.set()

    def close(self) -> None:
        self.closed = True
        self._ready.set()

    async def next(self, wait_seconds: float | None) -> service_pb2.ManifestEvent | None:
        """The next event, or None when `wait_seconds` pass without one (None: wait forever)."""
        while True:
            if self.overflowed:
                raise SubscriptionOverflow
            if self.closed:
                raise SubscriptionClosed
            if self._events:
                return self._events.popleft()
            self._ready.clear()
            try:
                async with asyncio.timeout(wait_seconds):
                    await self._ready.wait()
            except TimeoutError:
                return None


class ManifestHub:
    def __init__(self, engine: AsyncEngine, *, poll_seconds: float = 5.0, page_size: int = 500) -> None:
        self._engine = engine
        self._poll_seconds = poll_seconds
        self._page_size = page_size
        self._subscriptions: set[Subscription] = set()
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._closed = False
        # Every event up to this id has been offered to the subscriptions present when it was read.
        self.last_event_id = 0

    async def start(self) -> None:
        self.last_event_id = await newest_event_id(self._engine)
        self._task = asyncio.create_task(self._run(), name="manifest-hub")

    def poke(self, event_id: int | None = None) -> None:
        """New events may exist (up to `event_id` when known)."""
        if event_id is None or event_id > self.last_event_id:
            self._wake.set()

    def subscribe(self, thread_id: str, capacity: int) -> Subscription:
        if self._closed:
            raise SubscriptionClosed
        subscription = Subscription(thread_id, capacity)
        self._subscriptions.add(subscription)
        return subscription

    def unsubscribe(self, subscription: Subscription) -> None:
        self._subscriptions.discard(subscription)

    @property
    def observer_count(self) -> int:
        return len(self._subscriptions)

    async def close(self) -> None:
        self._closed = True
        for subscription in self._subscriptions:
            subscription.close()
        self._subscriptions.clear()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _run(self) -> None:
        while True:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self._poll_seconds):
                    await self._wake.wait()
            self._wake.clear()
            try:
                await self._dispatch_new()
            except Exception:
                log.warning("reading new manifest events failed; retrying in 1s", exc_info=True)
                await asyncio.sleep(1.0)
                self._wake.set()

    async def _dispatch_new(self) -> None:
        while True:
            events = await events_after(self._engine, self.last_event_id, limit=self._page_size)
            # No await from here to the end of the loop body: a subscription
            # registered at any await point sees either all of a page or none.
            for event in events:
                for subscription in list(self._subscriptions):
                    if subscription.wants(event):
                        subscription.offer(event)
                        if subscription.overflowed:
                            self._subscriptions.discard(subscription)
                self.last_event_id = event.event_id
            if len(events) < self._page_size:
                return
