"""The cache boundary: what separates the stable half of a prompt from the dynamic half."""

from __future__ import annotations

CACHE_BOUNDARY = "\n<!-- PIONEER_PROMT_CACHE_BOUNDARY -->\n"


def join_halves(stable: str, dynamic: str) -> str:
    """stable + boundary + dynamic; boundary + dynamic when stable is empty; stable alone
    when dynamic is empty; "" when both are."""
    if not dynamic:
        return stable
    return f"{stable}{CACHE_BOUNDARY}{dynamic}"
