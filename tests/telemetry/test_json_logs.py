"""`--log-format json`: every line one JSON object, with the fields a record carries."""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys

from opentelemetry.sdk.trace import TracerProvider

from pioneer_grpc.telemetry.logs import JsonFormatter, log_handler
from tests.server.test_console_script import SCRIPT, free_port, wait_serving


def record(message: str, *args, **extra) -> logging.LogRecord:
    made = logging.LogRecord("pioneer_grpc.server", logging.INFO, __file__, 1, message, args, None)
    for name, value in extra.items():
        setattr(made, name, value)
    return made


def test_a_line_carries_the_fields_attached_to_its_record():
    line = json.loads(
        JsonFormatter().format(
            record(
                "rpc %s",
                "done",
                request_id="req-1",
                method="/pioneer.v1.TurnService/PrepareTurn",
                code="OK",
                duration_ms=3.25,
            )
        )
    )
    assert line["message"] == "rpc done"
    assert line["level"] == "INFO"
    assert line["logger"] == "pioneer_grpc.server"
    assert line["time"].endswith("Z")
    assert "T" in line["time"]
    assert {k: line[k] for k in ("request_id", "method", "code", "duration_ms")} == {
        "request_id": "req-1",
        "method": "/pioneer.v1.TurnService/PrepareTurn",
        "code": "OK",
        "duration_ms": 3.25,
    }
    assert "trace_id" not in line


def test_inside_a_span_the_line_names_the_trace_and_an_exception_is_one_field():
    tracer = TracerProvider().get_tracer("test")
    with tracer.start_as_current_span("rpc") as span:
        try:
            raise ValueError("boom")
        except ValueError:
            failing = record("failed")
            failing.exc_info = sys.exc_info()
            line = json.loads(JsonFormatter().format(failing))
    assert line["trace_id"] == f"{span.get_span_context().trace_id:032x}"
    assert line["span_id"] == f"{span.get_span_context().span_id:016x}"
    assert "ValueError: boom" in line["exception"]


def test_text_stays_the_default():
    assert not isinstance(log_handler("text").formatter, JsonFormatter)
    assert isinstance(log_handler("json").formatter, JsonFormatter)


def test_serve_with_json_logs_writes_only_json_lines(tmp_path):
    address = f"127.0.0.1:{free_port()}"
    env = {**os.environ, "PIONEER_HOME": str(tmp_path / "home"), "PIONEER_LOG_FORMAT": "json"}
    proc = subprocess.Popen(
        [str(SCRIPT), "serve", "--listen", address, "--metrics-listen", f"127.0.0.1:{free_port()}"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        wait_serving(address, proc)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
    err = proc.stderr.read().decode() if proc.stderr else ""
    lines = [json.loads(line) for line in err.splitlines()]
    messages = [line["message"] for line in lines]
    assert any(m.startswith("pioneer-grpc serving on") for m in messages), messages
    assert any(m.startswith("metrics on http://") for m in messages), messages
    assert all(line["level"] in ("INFO", "WARNING") for line in lines)
