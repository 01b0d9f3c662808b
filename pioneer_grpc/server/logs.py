"""Request ids on log lines, and what the server logs at all.

The interceptor sets `REQUEST_ID` for the task serving an RPC (tasks it starts
inherit it); `RequestIdFilter` copies it onto every record as `request_id`, so
any handler's format can show it. A log line names an RPC by method, code,
duration and id; it never carries conversation content, SQL parameters or the
token (the drivers that would log parameters at DEBUG are kept above it).
"""

from __future__ import annotations

import logging
import re
import uuid
from contextvars import ContextVar

REQUEST_ID: ContextVar[str] = ContextVar("pioneer_request_id", default="-")
# The thread and turn the RPC's request names (empty: none); on its log lines as thread_id, turn_id.
THREAD_ID: ContextVar[str] = ContextVar("pioneer_thread_id", default="")
TURN_ID: ContextVar[str] = ContextVar("pioneer_turn_id", default="")
LOGGED_ID_CHARS = 200
REQUEST_ID_HEADER = "x-request-id"
# A client's id is kept when it is short and printable; anything else is replaced.
_ACCEPTED_ID = re.compile(r"[A-Za-z0-9._:/+=-]{1,128}")
TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s [%(request_id)s]: %(message)s"
# These log statements with their parameters at DEBUG (and alembic its plugins at INFO, on import).
QUIET_LOGGERS = (
    "aiosqlite",
    "sqlalchemy.engine",
    "asyncpg",
    "alembic.runtime.plugins",
    "alembic.runtime.migration",
)


def request_id_from(metadata: object) -> str:
    """The client's `x-request-id` when acceptable, else a new id."""
    for key, value in metadata or ():  # type: ignore[attr-defined]
        if key == REQUEST_ID_HEADER:
            text = value.decode("ascii", "replace") if isinstance(value, bytes) else str(value)
            if _ACCEPTED_ID.fullmatch(text):
                return text
            break
    return uuid.uuid4().hex


class RequestIdFilter(logging.Filter):
    """Sets `record.request_id` (`-` outside an RPC), and thread_id / turn_id when the RPC names them.

    Never drops a record.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        if not hasattr(record, "request_id"):
            record.request_id = REQUEST_ID.get()
        for name, variable in (("thread_id", THREAD_ID), ("turn_id", TURN_ID)):
            value = variable.get()
            if value and not hasattr(record, name):
                setattr(record, name, value)
        return True


def configure_logging(level: str, handler: logging.Handler) -> None:
    """Logs through `handler` (text or JSON), each record with its request id; text shows it in brackets."""
    handler.addFilter(RequestIdFilter())
    if type(handler.formatter) is logging.Formatter or handler.formatter is None:
        handler.setFormatter(logging.Formatter(TEXT_FORMAT))
    logging.basicConfig(level=level, handlers=[handler], force=True)
    quiet_drivers()


# grpcio's own logger, which logs a metadata value that is not valid UTF-8 whole, with a traceback.
GRPC_LOGGER = "grpc._cython.cygrpc"


class WithheldHeaderValues(logging.Filter):
    """Rewrites grpcio's "Invalid encoding on <value>" record to name no value (it may be the token)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.msg, str) and record.msg.startswith("Invalid encoding on"):
            record.msg = "a metadata value is not valid UTF-8 (value not logged)"
            record.args = None
            record.exc_info = None
            record.exc_text = None
            record.levelno, record.levelname = logging.WARNING, "WARNING"
        return True


def quiet_drivers() -> None:
    """Drivers log statements with their parameters at DEBUG: never below WARNING, whatever the root says.

    And grpcio never logs a header's value.
    """
    for name in QUIET_LOGGERS:
        logger = logging.getLogger(name)
        if logger.level < logging.WARNING:
            logger.setLevel(logging.WARNING)
    grpc_logger = logging.getLogger(GRPC_LOGGER)
    if not any(isinstance(f, WithheldHeaderValues) for f in grpc_logger.filters):
        grpc_logger.addFilter(WithheldHeaderValues())
