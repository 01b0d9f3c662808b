"""In-process fan-out of manifest events to live observers.

One reader task per server reads new rows (id > the last one it dispatched) in id
order whenever it is poked: by the PostgreSQL listener when any replica commits,
and by a slow periodic poll as a safety net. A poke carries at most an id, used
only to skip a read when that id was already dispatched; those events always
come from the table. A commit of this process is handed over whole by the
recorder and dispatched at once when it is the very next id (nothing can be
missing before it); otherwise it only pokes the reader.

With no observer the reader reads no rows: it only learns how far the table
goes (a poke's id says it: ids commit in order, so every id below one is
committed), because a watch that subscribes later reads the table once more
after subscribing (watch.py). Workers and replicas then pay nothing for each
other's events until someone watches.

Each observer has a subscription bounded in events and in bytes (a manifest
can be large; each event's encoded size is computed once). The hub never waits for an observer:
when a subscription is full it is marked overflowed and dropped, and its stream
ends telling the observer to resume from its last id.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque

from pioneer_grpc.store.port import Manifests
from pioneer_grpc.tenants.callers import DEFAULT_TENANT
from pioneer_grpc.v1 import manifest_service_pb2 as service_pb2

log = logging.getLogger(__name__)


class SubscriptionOverflow(Exception):
    """The observer fell more than its queue's events or bytes behind."""


class SubscriptionClosed(Exception):
    """The hub is shutting down."""


class Subscription:
    def __init__(
        self, thread_id: str, capacity: int, max_bytes: int = 0, tenant: str | None = DEFAULT_TENANT
    ) -> None:
        # The tenant whose events it wants (None: every tenant's, an admin's watch), of one thread
        # ("": of every thread). The hub offers it nothing else.
        self.tenant = tenant
        self.thread_id = thread_id
        self.capacity = capacity
        # 0: no bound in bytes.
        self.max_bytes = max_bytes
        self.overflowed = False
        # What ran out when it overflowed: "events" or "bytes".
        self.overflowed_on = ""
        self.closed = False
        # Given the thread's final event (deleted): nothing more is offered.
        self.ended = False
        # The watched thread's creation time as the watch last read it (None: no such thread then):
        # when it is gone or another, the thread was deleted (ManifestHub._end_deleted).
        self.created: str | None = None
        # Responses built once per event by the hub and shared by every subscription: never mutated.
        self._events: deque[tuple[service_pb2.WatchManifestsResponse, int]] = deque()
        self.pending_bytes = 0
        self._ready = asyncio.Event()

    def wants(self, event: service_pb2.ManifestEvent) -> bool:
        if self.tenant is not None and event.tenant != self.tenant:
            return False
        return not self.thread_id or event.thread_id == self.thread_id

    @property
    def pending(self) -> int:
        return len(self._events)

    def offer(self, event: service_pb2.WatchManifestsResponse, size: int = 0) -> None:
        """`size` is the event's encoded size in bytes (counted against `max_bytes`)."""
        if self.overflowed or self.closed:
            return
        too_many = len(self._events) >= self.capacity
        too_large = self.max_bytes > 0 and self._events and self.pending_bytes + size > self.max_bytes
        if too_many or too_large:
            # The hub drops an overflowed subscription; its queue goes when the stream ends.
            self.overflowed = True
            self.overflowed_on = "events" if too_many else "bytes"
        else:
            self._events.append((event, size))
            self.pending_bytes += size
        self._ready.set()

    def close(self) -> None:
        self.closed = True
        self._ready.set()

    async def next(self, wait_seconds: float | None) -> service_pb2.WatchManifestsResponse | None:
        """The next event, or None when `wait_seconds` pass without one (None: wait forever)."""
        while True:
            if self.overflowed:
                raise SubscriptionOverflow
            if self.closed:
                raise SubscriptionClosed
            if self._events:
                event, size = self._events.popleft()
                self.pending_bytes -= size
                return event
            self._ready.clear()
            try:
                async with asyncio.timeout(wait_seconds):
                    await self._ready.wait()
            except TimeoutError:
                return None


class ManifestHub:
    def __init__(self, manifests: Manifests, *, poll_seconds: float = 5.0, page_size: int = 500) -> None:
        """`manifests`: the store's, which the events are read from."""
        self._manifests = manifests
        self._poll_seconds = poll_seconds
        self._page_size = page_size
        self._subscriptions: set[Subscription] = set()
        # Tasks serving a watch stream, so close() can wait for them (see there).
        self._streams: set[asyncio.Task[object]] = set()
        self._wake = asyncio.Event()
        # The largest id a poke named since the reader last ran (0: none named).
        self._poked_id = 0
        self._task: asyncio.Task[None] | None = None
        self._closed = False
        # Every event up to this id has been offered to the subscriptions present when it was read.
        self.last_event_id = 0

    async def start(self) -> None:
        self.last_event_id = await self._manifests.newest_event_id()
        self._task = asyncio.create_task(self._run(), name="manifest-hub")

    def poke(self, event_id: int | None = None) -> None:
        """New events may exist (up to `event_id` when known)."""
        if event_id is None or event_id > self.last_event_id:
            self._poked_id = max(self._poked_id, event_id or 0)
            self._wake.set()

    def publish(self, event: service_pb2.ManifestEvent) -> None:
        """An event this process just committed."""
        if event.event_id == self.last_event_id + 1 and not self._closed:
            self._dispatch(event)
        else:
            self.poke(event.event_id)

    def subscribe(
        self, thread_id: str, capacity: int, max_bytes: int = 0, *, tenant: str | None = DEFAULT_TENANT
    ) -> Subscription:
        if self._closed:
            raise SubscriptionClosed
        subscription = Subscription(thread_id, capacity, max_bytes, tenant)
        self._subscriptions.add(subscription)
        return subscription

    def end_thread(self, tenant: str, thread_id: str) -> None:
        """The tenant's thread was deleted (here, or by another process: `_end_deleted`): each watch
        of it gets a last event saying so, once, then ends."""
        final = service_pb2.WatchManifestsResponse(
            event=service_pb2.ManifestEvent(tenant=tenant, thread_id=thread_id, thread_deleted=True)
        )
        for subscription in list(self._subscriptions):
            if subscription.thread_id == thread_id and subscription.tenant in (None, tenant):
                self._end(subscription, final)

    @staticmethod
    def _end(subscription: Subscription, final: service_pb2.WatchManifestsResponse) -> None:
        if not subscription.ended:
            subscription.offer(final)
            subscription.ended = True

    def unsubscribe(self, subscription: Subscription) -> None:
        self._subscriptions.discard(subscription)

    def stream_started(self) -> None:
        """Called by the task serving a watch stream; forgotten when that task is done."""
        task = asyncio.current_task()
        if task is not None:
            self._streams.add(task)
            task.add_done_callback(self._streams.discard)

    @property
    def observer_count(self) -> int:
        return len(self._subscriptions)

    def observer_lags(self) -> list[int]:
        """Events dispatched to each observer and not yet sent to it."""
        return [subscription.pending for subscription in list(self._subscriptions)]

    async def close(self, wait_seconds: float = 10.0) -> None:
        """Ends every stream and waits for their tasks.

        The server cancels open streams when it stops but does not wait for
        them; one cancelled inside a database read still holds a connection
        until that read returns. Waiting here keeps the store from being
        closed under it (which leaves the read's task pending for ever).
        """
        self._closed = True
        for subscription in self._subscriptions:
            subscription.close()
        self._subscriptions.clear()
        streams = [task for task in self._streams if not task.done()]
        if streams:
            _, pending = await asyncio.wait(streams, timeout=wait_seconds)
            if pending:
                log.warning("%d manifest streams did not end within %ss", len(pending), wait_seconds)
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
            poked_id, self._poked_id = self._poked_id, 0
            try:
                if not await self._skipped_unwatched(poked_id):
                    await self._dispatch_new()
                await self._end_deleted()
            except Exception:
                log.warning("reading new manifest events failed; retrying in 1s", exc_info=True)
                await asyncio.sleep(1.0)
                self._wake.set()

    async def _end_deleted(self) -> None:
        """Ends the watches of threads another process deleted: a deleted thread's events are deleted
        with it, so no event says so; its row being gone (or created anew) does. Read with each
        wake of the reader (a NOTIFY on PostgreSQL, which a delete sends; SQLite workers' poll)."""
        # A watch of one tenant's thread (an admin's watch of every tenant names no one thread's row).
        watching = [s for s in self._subscriptions if s.thread_id and s.tenant is not None and not s.ended]
        if not watching:
            return
        keys = sorted({(s.tenant or "", s.thread_id) for s in watching})
        present = await self._manifests.threads_created(keys)
        for subscription in watching:
            created = present.get((subscription.tenant or "", subscription.thread_id))
            if subscription.created is not None and created != subscription.created:
                final = service_pb2.WatchManifestsResponse(
                    event=service_pb2.ManifestEvent(
                        tenant=subscription.tenant or "",
                        thread_id=subscription.thread_id,
                        thread_deleted=True,
                    )
                )
                self._end(subscription, final)
            elif created is not None:
                subscription.created = created

    async def _skipped_unwatched(self, poked_id: int) -> bool:
        """With nobody subscribed, moves past the newest committed event without reading the rows."""
        if self._subscriptions:
            return False
        newest = poked_id or await self._manifests.newest_event_id()
        if self._subscriptions:
            # One subscribed during the read: its own last read of the table may predate
            # what this one saw, so those events must reach it from here.
            return False
        self.last_event_id = max(self.last_event_id, newest)
        return True

    async def _dispatch_new(self) -> None:
        while True:
            events = await self._manifests.events_after(
                self.last_event_id, limit=self._page_size, every_tenant=True
            )
            # No await from here to the end of the loop body: a subscription
            # registered at any await point sees either all of a page or none.
            for event in events:
                # publish() may have dispatched it while the read was in flight.
                if event.event_id > self.last_event_id:
                    self._dispatch(event)
            if len(events) < self._page_size:
                return

    def _dispatch(self, event: service_pb2.ManifestEvent) -> None:
        if not self._subscriptions:  # no response to build (it copies the manifest)
            self.last_event_id = event.event_id
            return
        response = service_pb2.WatchManifestsResponse(event=event)
        size = response.ByteSize()
        for subscription in list(self._subscriptions):
            if subscription.wants(event):
                subscription.offer(response, size)
                if subscription.overflowed:
                    self._subscriptions.discard(subscription)
        self.last_event_id = event.event_id
