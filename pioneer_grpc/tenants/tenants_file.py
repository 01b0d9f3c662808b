"""The tenants file: which token digest is which tenant and role, and each tenant's request rate.

    [[token]]
    sha256 = "<hex sha256 of the bearer token>"
    tenant = "acme"
    role = "agent"            # agent, viewer or admin

    [tenant.acme]
    requests_per_second = 50
    burst = 100               # default: requests_per_second, rounded up

Tokens are never in the file, only their sha256 (`printf %s "$TOKEN" | sha256sum`).
Every mistake is reported with the line of its entry and what is wrong, all of
them at once, so a file is fixed in one pass.
"""

from __future__ import annotations

import hashlib
import hmac
import math
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pioneer_grpc.tenants.callers import DEFAULT_TENANT, Caller, Role
from pioneer_grpc.tenants.limits import Quota, RateLimit

# Tenant names: bounded, as they become metric labels, log fields and keys.
TENANT_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
_HEX_DIGEST = re.compile(r"[0-9A-Fa-f]{64}")
_TOKEN_HEADER = re.compile(r"^\s*\[\[\s*token\s*\]\]")
_TENANT_HEADER = re.compile(r"^\s*\[\s*tenant\s*\.\s*\"?([^\]\"]+)\"?\s*\]")
TOKEN_KEYS = ("sha256", "tenant", "role")
LIMIT_KEYS = ("requests_per_second", "burst", "max_threads", "max_stored_bytes")
QUOTA_KEYS = ("max_threads", "max_stored_bytes")
ROLES = ", ".join(role.value for role in Role)


class TenantsError(ValueError):
    """The tenants file cannot be used; the message names the file, and each line and what is wrong."""

    @property
    def one_line(self) -> str:
        """The message on one line (a log line): the problems joined by '; '."""
        head, *problems = str(self).splitlines()
        return f"{head} {'; '.join(p.strip() for p in problems)}" if problems else head


@dataclass(frozen=True)
class _Entry:
    digest: bytes
    caller: Caller


@dataclass(frozen=True)
class Tenants:
    """Token digests and their callers, and the tenants' rate limits."""

    entries: tuple[_Entry, ...]
    limits: Mapping[str, RateLimit] = field(default_factory=dict)
    # The tenants' caps on threads and stored bytes (a tenant without one: none).
    quotas: Mapping[str, Quota] = field(default_factory=dict)
    _by_digest: dict[bytes, _Entry] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_by_digest", {entry.digest: entry for entry in self.entries})

    @property
    def tenant_names(self) -> frozenset[str]:
        return frozenset(entry.caller.tenant for entry in self.entries)

    def caller_of(self, token: bytes) -> Caller | None:
        """The caller whose digest is the token's sha256.

        The lookup is by digest, so a call costs the same with 1 token or 10,000. What a lookup's
        timing could tell depends only on the sha256 of what the caller sent (which it cannot steer
        without a preimage) and on Python's per-process keyed hash of it; the entry found is then
        compared with the digest in constant time.
        """
        digest = hashlib.sha256(token).digest()
        entry = self._by_digest.get(digest)
        if entry is None or not hmac.compare_digest(digest, entry.digest):
            return None
        return entry.caller

    @classmethod
    def single_token(cls, token: str) -> Tenants:
        """--token: one token, the default tenant, the agent role."""
        digest = hashlib.sha256(token.encode()).digest()
        return cls((_Entry(digest, Caller(DEFAULT_TENANT, Role.AGENT)),))


def load_tenants(path: Path) -> Tenants:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise TenantsError(f"tenants file {path} cannot be read: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise TenantsError(f"tenants file {path} is not UTF-8 text") from None
    return parse_tenants(text, str(path))


def parse_tenants(text: str, name: str = "tenants file") -> Tenants:
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise TenantsError(f"{name} is not valid TOML: {exc}") from None
    problems: list[str] = []
    for key in document:
        if key not in ("token", "tenant"):
            problems.append(f"unknown top-level key {key!r} (expected [[token]] entries and [tenant.NAME])")
    entries = _entries(document.get("token"), _header_lines(text, _TOKEN_HEADER), problems)
    quotas: dict[str, Quota] = {}
    limits = _limits(document.get("tenant"), text, {e.caller.tenant for e in entries}, problems, quotas)
    if not entries and not problems:
        problems.append("names no token ([[token]] with sha256, tenant and role): every call is refused")
    if problems:
        listed = "\n".join(f"  {problem}" for problem in problems)
        raise TenantsError(f"{name} has {len(problems)} problem(s):\n{listed}")
    return Tenants(tuple(entries), limits, quotas)


def _header_lines(text: str, header: re.Pattern[str]) -> list[int]:
    return [number for number, line in enumerate(text.splitlines(), 1) if header.match(line)]


def _where(index: int, lines: list[int]) -> str:
    return f"line {lines[index]}: [[token]] {index + 1}" if index < len(lines) else f"[[token]] {index + 1}"


def _entries(raw: Any, lines: list[int], problems: list[str]) -> list[_Entry]:
    if raw is None:
        return []
    if not isinstance(raw, list):
        problems.append("'token' must be an array of tables: write each entry under its own [[token]]")
        return []
    entries: list[_Entry] = []
    first_seen: dict[bytes, int] = {}
    for index, item in enumerate(raw):
        where = _where(index, lines)
        if not isinstance(item, dict):
            problems.append(f"{where}: must be a table with sha256, tenant and role")
            continue
        found = _unknown_keys(item, TOKEN_KEYS)
        found += [f"{key} is missing" for key in TOKEN_KEYS if key not in item]
        digest, tenant, role = item.get("sha256"), item.get("tenant"), item.get("role")
        if "sha256" in item and not (isinstance(digest, str) and _HEX_DIGEST.fullmatch(digest)):
            found.append(
                f"sha256 must be 64 hexadecimal characters (the sha256 of the token, not the token), "
                f"got {_described(digest)}"
            )
        if "tenant" in item and not (isinstance(tenant, str) and TENANT_NAME.fullmatch(tenant)):
            found.append(
                f"tenant must be 1-64 letters, digits, '.', '_' or '-' (starting with a letter or digit), "
                f"got {_described(tenant)}"
            )
        if "role" in item and role not in {r.value for r in Role}:
            found.append(f"unknown role {role!r} (roles: {ROLES})")
        if found:
            problems.extend(f"{where}: {problem}" for problem in found)
            continue
        key = bytes.fromhex(str(digest))
        if key in first_seen:
            problems.append(
                f"{where}: the same sha256 as {_where(first_seen[key], lines)} "
                "(a token has one tenant and one role)"
            )
            continue
        first_seen[key] = index
        entries.append(_Entry(key, Caller(str(tenant), Role(role))))
    return entries


def _unknown_keys(table: dict[str, Any], known: tuple[str, ...]) -> list[str]:
    return [f"unknown key {key!r} (expected {', '.join(known)})" for key in table if key not in known]


def _described(value: Any) -> str:
    if isinstance(value, str):
        return f"{len(value)} characters" if len(value) > 20 else repr(value)
    return f"a {type(value).__name__}"


def _whole(value: Any) -> bool:
    return not isinstance(value, bool) and isinstance(value, int) and value >= 1


def _table_problems(table: dict[str, Any]) -> list[str]:
    """What is wrong with one [tenant.NAME] table."""
    found = _unknown_keys(table, LIMIT_KEYS)
    rate, burst = table.get("requests_per_second"), table.get("burst")
    for key in QUOTA_KEYS:
        if table.get(key) is not None and not _whole(table[key]):
            found.append(f"{key} must be a whole number of at least 1, got {table[key]!r}")
    if rate is None and all(table.get(key) is None for key in QUOTA_KEYS):
        found.append("requests_per_second is missing (or max_threads, max_stored_bytes)")
    elif rate is not None and (
        isinstance(rate, bool) or not isinstance(rate, int | float) or not 0 < rate < math.inf
    ):
        found.append(f"requests_per_second must be a number above 0, got {rate!r}")
    if burst is not None and not _whole(burst):
        found.append(f"burst must be a whole number of at least 1, got {burst!r}")
    if burst is not None and rate is None:
        found.append("burst without requests_per_second")
    return found


def _limits(
    raw: Any, text: str, tenants: set[str], problems: list[str], quotas: dict[str, Quota]
) -> dict[str, RateLimit]:
    """The rate limits of the [tenant.NAME] tables; their caps go into `quotas`."""
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        problems.append("'tenant' must hold one table per tenant: [tenant.NAME]")
        return {}
    lines: dict[str, int] = {}
    for number, line in enumerate(text.splitlines(), 1):
        if match := _TENANT_HEADER.match(line):
            lines.setdefault(match.group(1).strip(), number)
    limits: dict[str, RateLimit] = {}
    for tenant, table in raw.items():
        where = f"line {lines[tenant]}: [tenant.{tenant}]" if tenant in lines else f"[tenant.{tenant}]"
        if not isinstance(table, dict):
            problems.append(f"{where}: must be a table")
            continue
        found = _table_problems(table)
        if tenant not in tenants:
            found.append("no [[token]] names this tenant")
        rate, burst = table.get("requests_per_second"), table.get("burst")
        caps = {key: table.get(key) for key in QUOTA_KEYS}
        if found:
            problems.extend(f"{where}: {problem}" for problem in found)
            continue
        if rate is not None:
            limits[tenant] = RateLimit.of(float(rate), burst)
        if any(cap is not None for cap in caps.values()):
            quotas[tenant] = Quota(caps["max_threads"], caps["max_stored_bytes"])
    return limits
