"""Requests per second per tenant: one token bucket each, refilled continuously.

A call takes one token from its tenant's bucket (a stream counts once, when it
opens); an empty bucket answers how long until the next token.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class RateLimit:
    requests_per_second: float
    # Calls a tenant may make at once after a quiet spell.
    burst: int

    @classmethod
    def of(cls, requests_per_second: float, burst: int | None = None) -> RateLimit:
        if burst is None:
            burst = max(1, math.ceil(requests_per_second))
        return cls(requests_per_second, burst)


@dataclass(frozen=True)
class Quota:
    """A tenant's caps (tenants file): threads, and bytes of stored entries; None: no cap."""

    max_threads: int | None = None
    max_stored_bytes: int | None = None


@dataclass
class _Bucket:
    limit: RateLimit
    tokens: float
    stamp: float

    def take(self, now: float) -> float:
        """0.0 when a token was taken; otherwise the seconds until one is there."""
        rate = self.limit.requests_per_second
        self.tokens = min(float(self.limit.burst), self.tokens + max(0.0, now - self.stamp) * rate)
        self.stamp = now
        if self.tokens >= 1.0:
            self.tokens -= 1.0
            return 0.0
        return (1.0 - self.tokens) / rate


class RateLimits:
    """The buckets of the tenants that have a limit; a tenant without one is never refused."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._buckets: dict[str, _Bucket] = {}

    def configure(self, limits: Mapping[str, RateLimit]) -> None:
        """Takes a new file's limits: a tenant whose limit is unchanged keeps its bucket as it is."""
        now = self._clock()
        buckets: dict[str, _Bucket] = {}
        for tenant, limit in limits.items():
            kept = self._buckets.get(tenant)
            if kept is not None and kept.limit == limit:
                buckets[tenant] = kept
            else:
                buckets[tenant] = _Bucket(limit, float(limit.burst), now)
        self._buckets = buckets

    def take(self, tenant: str) -> tuple[float, RateLimit | None]:
        """(0.0, limit) when the call may go ahead; (seconds to wait, limit) when it may not."""
        bucket = self._buckets.get(tenant)
        if bucket is None:
            return 0.0, None
        return bucket.take(self._clock()), bucket.limit
