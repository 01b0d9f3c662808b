"""ListThreads' `filter` (AIP-160, the subset the thread list needs), parsed into a ThreadFilter.

    pioneer                                  thread id containing "pioneer"
    thread_id:"pio"                          the same, spelled out (`:` is "has": a substring)
    model = "claude-sonnet-4-5"              the thread's model, exactly
    has_cache_breaks = true                  a round of the thread broke its prefix
    update_time > "2026-12-01T00:00:00Z"     updated after (also >=, <, <=)

Terms are joined by AND (or by spaces, which mean AND). Threads have no title: a bare word matches
the thread id. Pure: a string in, a ThreadFilter or FieldViolations out. A tenant term comes when
threads have tenants.
"""

from __future__ import annotations

import re
from datetime import datetime

from pioneer_grpc.errors import FieldViolation
from pioneer_grpc.store.port import ThreadFilter

FIELD = "filter"
MAX_TERMS = 8
_TOKEN = re.compile(r'\s*(?:(?P<quoted>"(?:[^"\\]|\\.)*")|(?P<op><=|>=|!=|[:=<>])|(?P<word>[^\s:=<>"]+))')
_COMPARE = ("<", "<=", ">", ">=")
FIELDS = ("thread_id", "model", "has_cache_breaks", "update_time")


def _tokens(text: str) -> list[tuple[str, str]]:
    out, at = [], 0
    while at < len(text):
        if text[at:].strip() == "":
            break
        match = _TOKEN.match(text, at)
        if match is None or match.end() == at:
            raise ValueError(f"cannot read the filter at character {at + 1}")
        kind = match.lastgroup or ""
        value = match.group(kind)
        if kind == "quoted":
            value = re.sub(r"\\(.)", r"\1", value[1:-1])
        out.append((kind, value))
        at = match.end()
    return out


def _terms(tokens: list[tuple[str, str]]) -> list[tuple[str, str, str]]:
    """(field, operator, value) per term; a bare value is ("", "", value)."""
    terms, i = [], 0
    while i < len(tokens):
        kind, value = tokens[i]
        if kind == "word" and value == "AND":
            i += 1
            continue
        if kind == "op":
            raise ValueError(f'"{value}" must follow a field name ({", ".join(FIELDS)})')
        if i + 1 < len(tokens) and tokens[i + 1][0] == "op":
            if kind != "word":
                raise ValueError(f"a quoted text cannot be a field name (got {value!r})")
            if i + 2 >= len(tokens) or tokens[i + 2][0] == "op":
                raise ValueError(f"{value} {tokens[i + 1][1]} needs a value after it")
            terms.append((value, tokens[i + 1][1], tokens[i + 2][1]))
            i += 3
            continue
        if kind == "word" and value in ("OR", "NOT"):
            raise ValueError(f"{value} is not supported: join terms with AND")
        terms.append(("", "", value))
        i += 1
    return terms


def _moment(value: str) -> datetime:
    try:
        found = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(
            f'update_time takes an RFC 3339 time such as "2026-12-01T00:00:00Z" (got {value!r})'
        ) from None
    if found.tzinfo is None:
        raise ValueError(f"update_time needs a zone: Z or an offset (got {value!r})")
    return found


def parse(text: str) -> ThreadFilter:
    """The filter `text` names; ValueError with a message a person can act on when it names none."""
    terms = _terms(_tokens(text))
    if len(terms) > MAX_TERMS:
        raise ValueError(f"at most {MAX_TERMS} terms (got {len(terms)})")
    found = ThreadFilter()
    for field, op, value in terms:
        if field in ("", "thread_id"):
            if op not in ("", ":"):
                raise ValueError(f'thread_id takes ":" (contains), not {op!r}')
            found = found.with_id(value)
        elif field == "model":
            if op != "=":
                raise ValueError(f'model takes "=" (got {op!r})')
            found = found.with_model(value)
        elif field == "has_cache_breaks":
            if op != "=" or value not in ("true", "false"):
                raise ValueError('has_cache_breaks takes "= true" or "= false"')
            found = found.with_breaks(value == "true")
        elif field == "update_time":
            if op not in _COMPARE:
                raise ValueError(f"update_time takes <, <=, > or >= (got {op!r})")
            found = found.with_time(op, _moment(value))
        else:
            raise ValueError(f"unknown field {field!r}: the filter knows {', '.join(FIELDS)}")
    return found


def violation(text: str) -> tuple[ThreadFilter | None, FieldViolation | None]:
    if not text.strip():
        return None, None
    try:
        return parse(text), None
    except ValueError as exc:
        return None, FieldViolation(FIELD, str(exc))
