"""One observer's stream: the stored backlog after its id, then live events, with heartbeats.

Hand-over without gap or duplicate: catch up from the table page by page, then
subscribe, then read the table once more. An event committed before the
subscription existed is in that last read; one dispatched after it is in the
subscription; one in both is dropped because its id is not above the cursor.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator

from pioneer_grpc import reasons
from pioneer_grpc.errors import ResourceExhausted, Unavailable
from pioneer_grpc.events.hub import ManifestHub, Subscription, SubscriptionClosed, SubscriptionOverflow
from pioneer_grpc.store.clock import now
from pioneer_grpc.store.port import Manifests
from pioneer_grpc.v1 import manifest_service_pb2 as service_pb2

PAGE_SIZE = 500


class ManifestWatch:
    def __init__(
        self,
        hub: ManifestHub,
        manifests: Manifests,
        *,
        tenant: str | None,
        thread_id: str,
        after_event_id: int,
        live_only: bool,
        heartbeat_seconds: float,
        queue_size: int,
        queue_bytes: int = 0,
    ) -> None:
        self._hub = hub
        self._manifests = manifests
        # None: every tenant's events (an admin's watch); `manifests` is then read across tenants.
        self._tenant = tenant
        self._thread_id = thread_id
        self._live_only = live_only
        # 0 disables heartbeats.
        self._heartbeat_seconds = heartbeat_seconds or None
        self._queue_size = queue_size
        self._queue_bytes = queue_bytes
        # The id of the last event sent: the observer's resume point.
        self.cursor = after_event_id
        self._subscription: Subscription | None = None

    def close(self) -> None:
        """Idempotent; safe to call from an RPC-done callback."""
        if self._subscription is not None:
            self._hub.unsubscribe(self._subscription)

    async def stream(self) -> AsyncGenerator[service_pb2.WatchManifestsResponse, None]:
        self._hub.stream_started()
        try:
            if self._live_only:
                self._subscription = self._subscribe()
                await self._note_created(self._subscription)
                # The table, not the hub: the hub may not have read the newest commits yet.
                self.cursor = await self._manifests.newest_event_id()
            else:
                async for response in self._backlog():
                    yield response
                self._subscription = self._subscribe()
                await self._note_created(self._subscription)
                async for response in self._backlog():
                    yield response
            # Says "caught up, now live"; also tells a filtered observer how far it may resume from.
            yield self._heartbeat()
            while True:
                live = await self._subscription.next(self._heartbeat_seconds)
                if live is None:
                    yield self._heartbeat()
                elif live.event.thread_deleted:
                    yield live
                    return
                elif live.event.event_id > self.cursor:
                    self.cursor = live.event.event_id
                    yield live
        except SubscriptionOverflow:
            raise ResourceExhausted(
                f"observer fell more than {self._behind()} behind; "
                f"reconnect with after_event_id={self.cursor} to resume without loss",
                reason=reasons.OBSERVER_TOO_SLOW,
                metadata={"resume_after_event_id": str(self.cursor)},
            ) from None
        except SubscriptionClosed:
            raise Unavailable(
                f"server is shutting down; reconnect with after_event_id={self.cursor} to resume",
                reason=reasons.SHUTTING_DOWN,
                metadata={"resume_after_event_id": str(self.cursor)},
            ) from None
        finally:
            self.close()

    def _behind(self) -> str:
        if self._subscription is not None and self._subscription.overflowed_on == "bytes":
            return f"{self._queue_bytes} bytes"
        return f"{self._queue_size} events"

    def _subscribe(self) -> Subscription:
        return self._hub.subscribe(self._thread_id, self._queue_size, self._queue_bytes, tenant=self._tenant)

    async def _note_created(self, subscription: Subscription) -> None:
        """The watched thread as it is now: the hub ends the watch when another process deletes it."""
        if self._thread_id and self._tenant is not None:
            key = (self._tenant, self._thread_id)
            found = await self._manifests.threads_created([key])
            subscription.created = subscription.created or found.get(key)

    async def _backlog(self) -> AsyncIterator[service_pb2.WatchManifestsResponse]:
        while True:
            events = await self._manifests.events_after(
                self.cursor, thread_id=self._thread_id, limit=PAGE_SIZE, every_tenant=self._tenant is None
            )
            for event in events:
                self.cursor = event.event_id
                yield service_pb2.WatchManifestsResponse(event=event)
            if len(events) < PAGE_SIZE:
                return

    def _heartbeat(self) -> service_pb2.WatchManifestsResponse:
        # With nothing queued, every event up to the hub's position has been sent.
        assert self._subscription is not None
        newest = self.cursor if self._subscription.pending else max(self.cursor, self._hub.last_event_id)
        heartbeat = service_pb2.Heartbeat(last_event_id=newest)
        heartbeat.time.FromDatetime(now())
        return service_pb2.WatchManifestsResponse(heartbeat=heartbeat)
