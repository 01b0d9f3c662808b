"""grpcurl, the real one, prints an error's ErrorInfo and BadRequest details as JSON.

grpcurl decodes the google.rpc.Status details through server reflection: the
server must serve the google.rpc files for it to name the details and their fields
(otherwise it prints `"@error": "google.rpc.ErrorInfo is not recognized"` and bytes).
grpcurl comes from `make grpcurl` (go install into .tools/bin; `make test` runs it).
"""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

from tests.support import unavailable_here

ROOT = Path(__file__).resolve().parents[2]
GRPCURL = ROOT / ".tools" / "bin" / "grpcurl"


async def _grpcurl(address: str, method: str, body: dict[str, object]) -> tuple[int, str]:
    if not GRPCURL.exists():
        unavailable_here(f"{GRPCURL} missing: `make grpcurl` installs it")
    process = await asyncio.create_subprocess_exec(
        str(GRPCURL),
        "-plaintext",
        "-d",
        json.dumps(body),
        address,
        method,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    out, _ = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode is not None
    return process.returncode, out.decode()


def _details(output: str) -> list[dict[str, object]]:
    """The JSON objects grpcurl prints under `Details:`, numbered `1)`, `2)` ..."""
    _, _, listed = output.partition("Details:")
    assert listed, output
    found = []
    for chunk in re.split(r"^\s*\d+\)\s*", listed, flags=re.MULTILINE)[1:]:
        found.append(json.loads(chunk))
    return found


async def test_grpcurl_prints_the_error_info_of_a_missing_thread(server):
    code, out = await _grpcurl(server.address, "pioneer.v1.HistoryService/GetThread", {"threadId": "nosuch"})
    assert code != 0
    assert "Code: NotFound" in out, out
    assert "not recognized" not in out, out
    [info] = _details(out)
    assert info == {
        "@type": "type.googleapis.com/google.rpc.ErrorInfo",
        "reason": "THREAD_NOT_FOUND",
        "domain": "pioneer.v1",
        "metadata": {"thread_id": "nosuch"},
    }


async def test_grpcurl_prints_the_bad_request_of_invalid_input(server):
    body = {"threadId": "t", "config": {"maxContextTokens": -5}}
    code, out = await _grpcurl(server.address, "pioneer.v1.HistoryService/CreateThread", body)
    assert code != 0
    assert "Code: InvalidArgument" in out, out
    assert "not recognized" not in out, out
    assert _details(out) == [
        {
            "@type": "type.googleapis.com/google.rpc.BadRequest",
            "field_violations": [
                {"field": "config.max_context_tokens", "description": "must be a positive number of tokens"}
            ],
        },
        {
            "@type": "type.googleapis.com/google.rpc.ErrorInfo",
            "domain": "pioneer.v1",
            "reason": "INVALID_ARGUMENT",
        },
    ]
