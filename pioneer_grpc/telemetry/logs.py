"""`--log-format json`: one JSON object per log line, for log pipelines.

Every line has time (UTC, ISO 8601), level, logger, message and the pid, plus
`worker` (its index) in a process of `serve --workers N`. Fields a caller
attaches to a record (`log.info(..., extra={"request_id": ..., "method": ...,
"code": ..., "duration_ms": ...})`, or a logging filter that sets them) become
keys of their own, so the request-id filter and the per-RPC access line need no
change to appear here. Inside a recorded span, trace_id and span_id join the
line so logs and traces can be matched. Plain text stays the default.
"""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime
from typing import Any

from opentelemetry import trace

# Attributes every LogRecord has; anything else on a record was added for the line.
_STANDARD = frozenset(logging.LogRecord("", 0, "", 0, "", (), None).__dict__) | {"message", "asctime"}
_PLAIN = (str, int, float, bool, type(None))


# `serve --workers N` names its processes pioneer-worker-0 ... (server/workers.py).
WORKER_PROCESS_PREFIX = "pioneer-worker-"


def _worker_index(process_name: str | None) -> int | None:
    suffix = (process_name or "").removeprefix(WORKER_PROCESS_PREFIX)
    return int(suffix) if suffix != process_name and suffix.isdigit() else None


def _jsonable(value: Any) -> Any:
    return value if isinstance(value, _PLAIN) else str(value)


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        moment = datetime.fromtimestamp(record.created, UTC)
        line: dict[str, Any] = {
            "time": moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z",
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
            "pid": record.process,
        }
        worker = _worker_index(record.processName)
        if worker is not None:
            line["worker"] = worker
        for name, value in record.__dict__.items():
            if name not in _STANDARD and not name.startswith("_"):
                line[name] = _jsonable(value)
        context = trace.get_current_span().get_span_context()
        if context.is_valid:
            line["trace_id"] = f"{context.trace_id:032x}"
            line["span_id"] = f"{context.span_id:016x}"
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        elif record.exc_text:
            line["exception"] = record.exc_text
        return json.dumps(line, ensure_ascii=False, separators=(",", ":"))


def log_handler(log_format: str) -> logging.Handler:
    """A stderr handler in the chosen format: `text` (the default) or `json`."""
    handler = logging.StreamHandler()
    if log_format == "json":
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    return handler


def announce(log_format: str, message: str, **fields: Any) -> None:
    """The start-up line on stdout (what a person or a script waits for): as written with the `text`
    format; with `json`, a log line like every other one (the fields become keys of their own)."""
    line = message
    if log_format == "json":
        record = logging.LogRecord("pioneer_grpc.server", logging.INFO, __file__, 0, message, (), None)
        record.__dict__.update(fields)
        line = JsonFormatter().format(record)
    print(line, flush=True)
