"""Open connections to the gRPC port: counted, capped, and the descriptor limit raised to allow them.

grpcio shows no connection to Python, so the count comes from the kernel: this
process's socket descriptors (/proc/self/fd) that /proc/net/tcp{,6} lists as
ESTABLISHED on the server's port, read at each scrape and, for admission, at
most once per REFRESH_SECONDS.

With more than `max_connections` open, an RPC arriving on a connection the
server has not served yet is answered RESOURCE_EXHAUSTED (connections already
served keep being served; health checks always are), with one log line per
LOG_SECONDS. A connection is known by its remote port. Past the cap and an overflow,
gRPC itself closes new connections at accept, and it closes idle ones and ones that
do not finish their handshake in time (channel args in server/app.py).
"""

from __future__ import annotations

import logging
import os
import resource
import time
from pathlib import Path

log = logging.getLogger(__name__)

REFRESH_SECONDS = 0.5
LOG_SECONDS = 10.0
_ESTABLISHED = "01"


def raise_descriptor_limit() -> tuple[int, int]:
    """Soft RLIMIT_NOFILE up to the hard limit (systemd's default soft limit is 1,024); (before, after)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = hard if hard != resource.RLIM_INFINITY else max(soft, 1 << 20)
    if soft < target:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        except (ValueError, OSError):
            return soft, soft
    return soft, target


def _socket_inodes() -> set[str]:
    inodes = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    return inodes


def _peers_on(port: int) -> set[str]:
    """Remote addresses (as /proc writes them) of this process's ESTABLISHED connections to `port`."""
    inodes = _socket_inodes()
    local_port = f"{port:04X}"
    peers = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if len(fields) > 9 and fields[3] == _ESTABLISHED and fields[1].endswith(":" + local_port):
                if fields[9] in inodes:
                    peers.add(fields[2])
    return peers


def _proc_peer(peer: str) -> str:
    """grpc's peer string ("ipv4:127.0.0.1:5000", "ipv6:[::1]:5000") as the port part /proc writes."""
    _, _, port = peer.rpartition(":")
    return f":{int(port):04X}" if port.isdigit() else peer


class Connections:
    """The live count of connections to `port`, and which peers may open RPCs when at the cap (0: no cap)."""

    def __init__(self, port: int, max_connections: int = 0) -> None:
        self.port = port
        self.max_connections = max_connections
        self._peers: set[str] = set()
        self._admitted: set[str] = set()
        self._read_at = 0.0
        self._logged_at = -LOG_SECONDS
        self.refused = 0

    def count(self) -> int:
        """Read now (a scrape asks once in a while)."""
        self._refresh(force=True)
        return len(self._peers)

    def _refresh(self, force: bool = False) -> None:
        now = time.monotonic()
        if force or now - self._read_at >= REFRESH_SECONDS:
            self._read_at = now
            self._peers = {peer[-5:] for peer in _peers_on(self.port)}
            self._admitted &= self._peers

    def admit(self, peer: str) -> bool:
        """Whether an RPC from `peer` is served: at or below the cap, or on a connection already served."""
        if self.max_connections <= 0:
            return True
        key = _proc_peer(peer)
        if key in self._admitted:
            return True
        # A connection the last reading did not see is new: read again, so the cap counts it.
        self._refresh(force=key not in self._peers)
        if len(self._peers) <= self.max_connections:
            self._admitted.add(key)
            return True
        self.refused += 1
        now = time.monotonic()
        if now - self._logged_at >= LOG_SECONDS:
            self._logged_at = now
            log.warning(
                "%d connections open (cap %d, max_connections): refusing RPCs on new connections "
                "(RESOURCE_EXHAUSTED); %d refused so far",
                len(self._peers),
                self.max_connections,
                self.refused,
            )
        return False
