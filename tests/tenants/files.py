"""Tenants files for tests: tokens, their digests, and the TOML that names them."""

from __future__ import annotations

import hashlib
from pathlib import Path

AGENT, VIEWER, ADMIN, OTHER_AGENT = (
    "acme-agent-token",
    "acme-viewer-token",
    "ops-admin-token",
    "zeta-agent-token",
)


def digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def token_entry(token: str, tenant: str, role: str) -> str:
    return f'[[token]]\nsha256 = "{digest(token)}"\ntenant = "{tenant}"\nrole = "{role}"\n\n'


def tenants_toml(*, limits: str = "") -> str:
    return (
        token_entry(AGENT, "acme", "agent")
        + token_entry(VIEWER, "acme", "viewer")
        + token_entry(ADMIN, "ops", "admin")
        + token_entry(OTHER_AGENT, "zeta", "agent")
        + limits
    )


def write_tenants(path: Path, text: str | None = None) -> Path:
    path.write_text(tenants_toml() if text is None else text, encoding="utf-8")
    return path
