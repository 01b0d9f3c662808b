"""The validity period of a PEM certificate, read from its DER (RFC 5280 4.1) with the standard library.

Only the fields up to `validity` are walked: Certificate -> tbsCertificate ->
[0] version (optional), serialNumber, signature, issuer, validity.
"""

from __future__ import annotations

import base64
import re
from datetime import UTC, datetime

_PEM = re.compile(rb"-----BEGIN CERTIFICATE-----(.+?)-----END CERTIFICATE-----", re.S)
_SEQUENCE, _UTC_TIME, _GENERALIZED_TIME, _VERSION = 0x30, 0x17, 0x18, 0xA0


def _element(der: bytes, at: int) -> tuple[int, int, int]:
    """(tag, start of content, end of content) of the DER element at `at`."""
    tag, length = der[at], der[at + 1]
    at += 2
    if length & 0x80:
        size = length & 0x7F
        length = int.from_bytes(der[at : at + size], "big")
        at += size
    if at + length > len(der):
        raise ValueError("truncated DER")
    return tag, at, at + length


def _time(tag: int, text: str) -> datetime:
    if tag == _UTC_TIME:
        year = int(text[:2])
        text = ("19" if year >= 50 else "20") + text
    elif tag != _GENERALIZED_TIME:
        raise ValueError("not a time")
    return datetime.strptime(text.rstrip("Z")[:14], "%Y%m%d%H%M%S").replace(tzinfo=UTC)


def validity(pem: bytes) -> tuple[datetime, datetime]:
    """(not before, not after) of the first certificate in `pem`; ValueError when there is none."""
    found = _PEM.search(pem)
    if found is None:
        raise ValueError("no PEM certificate")
    der = base64.b64decode(b"".join(found.group(1).split()))
    tag, start, _ = _element(der, 0)
    tag, at, _ = _element(der, start)  # tbsCertificate
    if tag != _SEQUENCE:
        raise ValueError("not a certificate")
    if der[at] == _VERSION:
        at = _element(der, at)[2]
    for _ in range(3):  # serialNumber, signature, issuer
        at = _element(der, at)[2]
    tag, at, _ = _element(der, at)
    if tag != _SEQUENCE:
        raise ValueError("no validity")
    before_tag, before_start, before_end = _element(der, at)
    after_tag, after_start, after_end = _element(der, before_end)
    return (
        _time(before_tag, der[before_start:before_end].decode("ascii")),
        _time(after_tag, der[after_start:after_end].decode("ascii")),
    )
