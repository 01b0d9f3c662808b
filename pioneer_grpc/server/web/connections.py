"""The HTTP listener's connections: accepted up to a cap, each bounded in time until its request is in.

uvicorn gives a keep-alive (idle) timeout and nothing else: a connection that
sends nothing, stops mid-headers or stops mid-body is held for ever, and its
asyncio listener logs a traceback per failed accept when descriptors run out.
So the listener accepts for itself (`Acceptor`, public asyncio calls only):
- it counts every connection from accept to close, TLS handshakes included,
  and closes a new one at once beyond `max_connections`;
- an accept that fails for lack of descriptors is retried after a pause, and
  logged once per LOG_SECONDS with the count since;
- TLS is asyncio's, with the header timeout as the handshake's bound.
`TimedH11Protocol` is uvicorn's HTTP/1.1 protocol with deadlines: a request's
headers within `header_seconds` of the connection's accept (TLS handshake
included) or of the request's first byte on a kept-alive connection, its body
within `body_seconds` of its headers; a request answered before its body was
read ends its connection. A
connection past a deadline is closed without a line of its own: the closes are
counted (metrics) and summed up in one WARNING per LOG_SECONDS.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import socket
import ssl
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

log = logging.getLogger("pioneer_grpc.server.web")

LOG_SECONDS = 10.0
# How long accepting pauses after it failed for lack of descriptors (asyncio's own pause is 1 s).
ACCEPT_RETRY_SECONDS = 0.1
_OUT_OF_RESOURCES = (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM)

# Why a connection was ended by the listener (the `reason` label of the closes counted).
OVER_LIMIT = "over_limit"
HEADER_TIMEOUT = "header_timeout"
BODY_TIMEOUT = "body_timeout"
TLS_HANDSHAKE = "tls_handshake"
BODY_UNREAD = "body_unread"


@dataclass(frozen=True)
class HttpLimits:
    max_connections: int
    header_seconds: float
    body_seconds: float
    idle_seconds: float


class Tally:
    """Connections ended by the listener, by reason: counted, and summed up in one line per LOG_SECONDS."""

    def __init__(self, counted: Callable[[str], None]) -> None:
        self._counted = counted
        self._since: Counter[str] = Counter()
        self._logged_at = -LOG_SECONDS
        self.open = 0

    def ended(self, reason: str) -> None:
        self._counted(reason)
        self._since[reason] += 1
        now = time.monotonic()
        if now - self._logged_at >= LOG_SECONDS:
            self._logged_at = now
            counts = ", ".join(f"{name} {count}" for name, count in sorted(self._since.items()))
            log.warning(
                "HTTP listener: %d connections open; ended by the listener since the last such line: %s",
                self.open,
                counts,
            )
            self._since.clear()


class Slot:
    """One accepted connection's place under the cap, given back once whatever happens to it."""

    def __init__(self, tally: Tally, accepted_at: float) -> None:
        self._tally = tally
        self._held = True
        self.accepted_at = accepted_at
        tally.open += 1

    def release(self) -> None:
        if self._held:
            self._held = False
            self._tally.open -= 1


class TimedH11Protocol(H11Protocol):
    """uvicorn's HTTP/1.1 protocol with a deadline for a request's headers and one for its body."""

    def __init__(self, *args: Any, limits: HttpLimits, slot: Slot, tally: Tally, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # uvicorn's keep-alive timeout is our idle timeout (call_later takes fractions of a second too).
        self.timeout_keep_alive = limits.idle_seconds  # type: ignore[assignment]
        self._limits = limits
        self._slot = slot
        self._tally = tally
        self._deadline: asyncio.TimerHandle | None = None

    def _arm(self, seconds: float) -> None:
        self._disarm()
        self._deadline = self.loop.call_later(seconds, self._deadline_passed)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _deadline_passed(self) -> None:
        self._deadline = None
        if self.transport.is_closing():
            return
        state = self.conn.their_state
        if state is h11.IDLE:
            self._end(HEADER_TIMEOUT)
        elif state is h11.SEND_BODY:
            self._end(BODY_TIMEOUT)

    def _end(self, reason: str) -> None:
        self._tally.ended(reason)
        self.transport.close()

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        # From the accept: a TLS handshake spends the headers' time.
        spent = self.loop.time() - self._slot.accepted_at
        self._arm(max(0.0, self._limits.header_seconds - spent))

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        self._slot.release()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        # The first byte of a request on a kept-alive connection starts its headers' deadline.
        if self._deadline is None and self.conn.their_state is h11.IDLE:
            self._arm(self._limits.header_seconds)
        super().data_received(data)

    def handle_events(self) -> None:
        before = self.conn.their_state
        super().handle_events()
        after = self.conn.their_state
        if after is h11.SEND_BODY and before is not h11.SEND_BODY:
            self._arm(self._limits.body_seconds)
        elif after is not h11.IDLE and after is not h11.SEND_BODY:
            self._disarm()  # the request is in (or the connection ends): the app answers in its time

    def on_response_complete(self) -> None:
        if self.conn.their_state is h11.SEND_BODY and not self.transport.is_closing():
            # Answered before its body was read (a refused token, say): the rest is not waited for.
            self._disarm()
            self._end(BODY_UNREAD)
            return
        super().on_response_complete()
        if self.conn.their_state is h11.IDLE:
            # Between requests uvicorn's keep-alive timeout holds; the next request's first byte arms ours.
            self._disarm()


ProtocolFactory = Callable[[Slot], asyncio.Protocol]


class Acceptor:
    """Accepts on one listening socket up to the cap; what uvicorn's shutdown asks of a server."""

    def __init__(
        self,
        sock: socket.socket,
        protocol: ProtocolFactory,
        limits: HttpLimits,
        tally: Tally,
        tls: ssl.SSLContext | None,
    ) -> None:
        self._sock = sock
        self._protocol = protocol
        self._limits = limits
        self._tally = tally
        self._tls = tls
        self._starting: set[asyncio.Task[None]] = set()
        self._task: asyncio.Task[None] | None = None
        self._starved = 0
        self._starved_logged_at = -LOG_SECONDS
        self._closed = False

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._accept(), name="pioneer-http-accept")

    async def _accept(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            try:
                conn, _ = await loop.sock_accept(self._sock)
            except OSError as exc:
                if self._closed:
                    return
                if exc.errno in _OUT_OF_RESOURCES:
                    self._starving(exc)
                if not isinstance(exc, ConnectionError):  # a reset before the accept concerns that one only
                    await asyncio.sleep(ACCEPT_RETRY_SECONDS)
                continue
            if self._tally.open >= self._limits.max_connections:
                conn.close()
                self._tally.ended(OVER_LIMIT)
                continue
            slot = Slot(self._tally, loop.time())
            task = loop.create_task(self._connect(conn, slot))
            self._starting.add(task)
            task.add_done_callback(self._starting.discard)

    async def _connect(self, conn: socket.socket, slot: Slot) -> None:
        loop = asyncio.get_running_loop()
        try:
            await loop.connect_accepted_socket(
                lambda: self._protocol(slot),
                conn,
                ssl=self._tls,
                ssl_handshake_timeout=self._limits.header_seconds if self._tls is not None else None,
            )
        except OSError:
            # A handshake that failed or timed out (plain HTTP to the TLS port, say): asyncio closed it.
            slot.release()
            if self._tls is not None:
                self._tally.ended(TLS_HANDSHAKE)
        except BaseException:
            slot.release()
            conn.close()
            raise

    def _starving(self, exc: OSError) -> None:
        self._starved += 1
        now = time.monotonic()
        if now - self._starved_logged_at >= LOG_SECONDS:
            self._starved_logged_at = now
            log.warning(
                "HTTP listener: accept failed (%s), %d times since the last such line; retrying every %.1f s "
                "(%d connections open here)",
                errno.errorcode.get(exc.errno or 0, str(exc)),
                self._starved,
                ACCEPT_RETRY_SECONDS,
                self._tally.open,
            )
            self._starved = 0

    def close(self) -> None:
        """Stops accepting (uvicorn's shutdown then ends the connections and awaits wait_closed)."""
        self._closed = True
        if self._task is not None:
            self._task.cancel()
        for task in list(self._starting):
            task.cancel()

    async def wait_closed(self) -> None:
        tasks = [t for t in (self._task, *self._starting) if t is not None]
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
