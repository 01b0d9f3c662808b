"""Logs carry request ids, methods, codes and durations; never content, SQL parameters or the token."""

from __future__ import annotations

import logging

import grpc
from sqlalchemy import text

from pioneer_grpc.server.logs import RequestIdFilter
from pioneer_grpc.store import append as append_store
from pioneer_grpc.v1 import (
    history_pb2,
    history_service_pb2,
    history_service_pb2_grpc,
    prompt_pb2,
    turn_service_pb2,
    turn_service_pb2_grpc,
)
from tests.builders import entry
from tests.support import decoded, eventually

MARKER = "MARKER-7f3a-conversation-secret"
TOKEN = "tok-9c1e-never-logged"


def _metadata(request_id: str = "") -> tuple[tuple[str, str], ...]:
    extra = (("x-request-id", request_id),) if request_id else ()
    return (("authorization", f"Bearer {TOKEN}"), *extra)


def _broken_append(conn, *_args):
    """A real driver error whose statement carries content as a parameter (no such table), in place
    of the append (its writes, or its checks when the lock's statement wrote the batch)."""
    conn.execute(text("INSERT INTO no_such_table (content) VALUES (:c)"), {"c": MARKER})


async def test_logs_carry_ids_and_no_secrets(pg_server_with_token, caplog, monkeypatch):
    server = pg_server_with_token
    caplog.set_level(logging.DEBUG)
    caplog.handler.addFilter(RequestIdFilter())
    channel = server.channel()
    history = history_service_pb2_grpc.HistoryServiceStub(channel)
    turns = turn_service_pb2_grpc.TurnServiceStub(channel)
    md = _metadata("client-id-1")

    call = history.CreateThread(
        history_service_pb2.CreateThreadRequest(thread_id="t", config=history_pb2.ThreadConfig(model="m")),
        metadata=md,
    )
    await call
    assert ("x-request-id", "client-id-1") in tuple(await call.initial_metadata())

    # Content travels every path: append, repeat, conflicting repeat, PrepareTurn, compile input.
    request = history_service_pb2.AppendEntriesRequest(
        thread_id="t", entries=[entry("e1", "u1", content=MARKER)]
    )
    await history.AppendEntries(request, metadata=_metadata())
    await history.AppendEntries(request, metadata=_metadata())
    changed = history_service_pb2.AppendEntriesRequest(
        thread_id="t", entries=[entry("e1", "u1", content=MARKER + " changed")]
    )
    try:
        await history.AppendEntries(changed, metadata=_metadata())
    except grpc.aio.AioRpcError as error:
        assert error.code() == grpc.StatusCode.ALREADY_EXISTS
    await turns.PrepareTurn(
        turn_service_pb2.PrepareTurnRequest(
            thread_id="t",
            turn_id="u2",
            new_entries=[entry("e2", "", content=MARKER)],
            compile_input=prompt_pb2.PromptCompileInput(extra_system=MARKER),
        ),
        metadata=_metadata(),
    )

    # A database error that is a bug: INTERNAL, naming the request id, logged without its parameters.
    monkeypatch.setattr(append_store, "append_rows", _broken_append)
    call = history.AppendEntries(
        history_service_pb2.AppendEntriesRequest(thread_id="t", entries=[entry("e3", "u3", content=MARKER)]),
        metadata=_metadata("bug-request-7"),
    )
    try:
        await call
        raise AssertionError("the broken append succeeded")
    except grpc.aio.AioRpcError as error:
        assert error.code() == grpc.StatusCode.INTERNAL
        assert "bug-request-7" in error.details()
        assert "OperationalError" not in error.details()
        assert "ProgrammingError" not in error.details()
        assert decoded(error).metadata.get("request_id") == "bug-request-7"

    # The access line is written as the handler ends, which may be just after the client has its answer.
    def access_lines() -> list[logging.LogRecord]:
        return [r for r in caplog.records if r.name == "pioneer_grpc.access"]

    await eventually(lambda: len(access_lines()) >= 6, what="six access lines")
    access = access_lines()
    assert len(access) == 6
    logged = caplog.text
    assert MARKER not in logged
    assert TOKEN not in logged
    assert all(r.request_id != "-" for r in access)
    assert access[0].request_id == "client-id-1"
    assert "code=INTERNAL" in access[-1].getMessage()
    assert access[-1].request_id == "bug-request-7"
    # The bug's own log line carries the same id as its access line.
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert errors
    assert all(r.request_id == "bug-request-7" for r in errors)
