"""A provider's response, on stdin, as the reply entries_of_response makes of it, printed as JSON.

    python -m pioneer_grpc.client.reply_cli PROVIDER_OPENAI_CHAT_COMPLETIONS turn-1 1 < response.json

Prints the entries to append and the usage in protobuf JSON, the stop reasons, the refusal
and what is not kept (the form of tests/data/replies' expectations); or the error, code and
path, with exit status 1.
"""

from __future__ import annotations

import json
import sys

from pioneer_grpc.client.replies import ReplyError, as_json, entries_of_response
from pioneer_grpc.v1 import provider_service_pb2

NAMES = [name for name in provider_service_pb2.Provider.keys() if name != "PROVIDER_UNSPECIFIED"]
USAGE = (
    "usage: python -m pioneer_grpc.client.reply_cli PROVIDER TURN_ID ROUND < response.json\n"
    f"PROVIDER: one of {', '.join(NAMES)}"
)


def main(argv: list[str]) -> int:
    if len(argv) != 3 or argv[0] not in NAMES or not argv[2].isdigit():
        print(USAGE, file=sys.stderr)
        return 2
    provider = provider_service_pb2.Provider.Value(argv[0])
    try:
        reply = entries_of_response(provider, sys.stdin.buffer.read(), argv[1], int(argv[2]))
    except ReplyError as exc:
        print(json.dumps({"error": {"code": exc.code, "path": exc.path, "message": str(exc)}}, indent=2))
        return 1
    print(json.dumps(as_json(reply), indent=2, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
