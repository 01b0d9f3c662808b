"""The bytes every ImportThread of this process holds while it reads its stream.

An import is written only once its whole stream is read and checked, so each one holds up to
MAX_IMPORT_BYTES; without a bound across them, many imports at once (on a server without a token,
any client) could hold memory without end. A chunk past the bound is refused with
RESOURCE_EXHAUSTED and a retry delay; the import it belongs to writes nothing.
"""

from __future__ import annotations

from pioneer_grpc.caps.history import MAX_IMPORT_BYTES
from pioneer_grpc.errors import RateLimited

# Two whole imports at once, or more smaller ones.
MAX_BUFFERED_IMPORT_BYTES = 2 * MAX_IMPORT_BYTES
RETRY_SECONDS = 5.0


class ImportBuffers:
    def __init__(self, limit: int = MAX_BUFFERED_IMPORT_BYTES) -> None:
        self.limit = limit
        self.held = 0

    def take(self, size: int) -> None:
        if self.held + size > self.limit:
            raise RateLimited(
                f"imports under way on this server hold {self.held:,} bytes, at its bound of "
                f"{self.limit:,}; nothing of this import was written: send it again later",
                retry_delay_seconds=RETRY_SECONDS,
            )
        self.held += size

    def give_back(self, size: int) -> None:
        self.held -= size
