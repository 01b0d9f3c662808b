"""`pioneer-grpc watch`: follow manifest events from a running server, one line per event.

    pioneer-grpc watch --addr 127.0.0.1:50051 --thread T --after 41 --json

Each line shows the time, event id, thread, turn, profile, section count, short
fingerprints (stable/dynamic/full) and the number of diagnostics; --json prints
the whole event as one JSON object per line instead. --stats shows, per
event, the thread's round and whether its stable prompt half broke the provider's
prefix cache (and by which section), and a table per thread when caught up and at
the end (see watch_stats.py). When the server is
unavailable, or ends the stream because this observer fell behind, the command
reconnects with the last id it saw: no event is lost or printed twice. After
--max-failures attempts in a row that got nothing (default 10: about half a
minute) it gives up with exit status 1; --retry-forever keeps trying.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from collections.abc import Callable
from datetime import UTC
from typing import TextIO

import grpc
from google.protobuf import json_format

from pioneer_grpc.cli import exits
from pioneer_grpc.cli.address import add_address_argument
from pioneer_grpc.cli.watch_stats import WatchStats
from pioneer_grpc.v1 import history_service_pb2, history_service_pb2_grpc, prompt_pb2
from pioneer_grpc.v1 import manifest_service_pb2 as service_pb2
from pioneer_grpc.v1 import manifest_service_pb2_grpc as service_grpc

RETRYABLE = (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.RESOURCE_EXHAUSTED)
FIRST_BACKOFF_SECONDS = 0.2
MAX_BACKOFF_SECONDS = 5.0
# Reconnect attempts in a row that receive nothing before watch gives up (--max-failures).
DEFAULT_MAX_FAILURES = 10


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "watch",
        help="follow manifest events live, resuming after disconnects",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _add_arguments(parser)
    parser.set_defaults(func=run)
    return parser


def _add_arguments(parser: argparse.ArgumentParser) -> None:
    add_address_argument(parser)
    parser.add_argument(
        "--token", default=os.environ.get("PIONEER_TOKEN", ""), help="bearer token (default $PIONEER_TOKEN)"
    )
    parser.add_argument("--thread", default="", help="only this thread's events")
    parser.add_argument("--after", type=int, default=0, help="start after this event id (default 0: all)")
    parser.add_argument("--json", action="store_true", help="one JSON object per event")
    parser.add_argument("--count", type=int, default=0, help="exit after this many events (default: never)")
    parser.add_argument(
        "--max-failures",
        type=int,
        default=DEFAULT_MAX_FAILURES,
        help="give up after this many failed reconnects in a row (default %(default)s)",
    )
    parser.add_argument("--retry-forever", action="store_true", help="never give up reconnecting")
    parser.add_argument(
        "--stats", action="store_true", help="per thread: rounds and prompt-cache breaks, by section"
    )


def short(fingerprint: str) -> str:
    return fingerprint[:12] or "-"


def format_line(event: service_pb2.ManifestEvent) -> str:
    manifest = event.manifest
    moment = event.create_time.ToDatetime(tzinfo=UTC)
    try:
        profile = prompt_pb2.PromptProfile.Name(manifest.profile).removeprefix("PROMPT_PROFILE_").lower()
    except ValueError:
        profile = str(manifest.profile)
    return (
        f"{moment.strftime('%Y-%m-%dT%H:%M:%S')}.{moment.microsecond // 1000:03d}Z #{event.event_id}"
        f" thread={event.thread_id} turn={event.turn_id} profile={profile}"
        f" sections={len(manifest.section_ids)} stable={short(manifest.fingerprint_stable)}"
        f" dynamic={short(manifest.fingerprint_dynamic)} full={short(manifest.fingerprint_full)}"
        f" diagnostics={len(manifest.diagnostics)}"
    )


def format_json(event: service_pb2.ManifestEvent) -> str:
    return json.dumps(
        json_format.MessageToDict(event, preserving_proto_field_name=True), separators=(",", ":")
    )


def _renderer(as_json: bool, stats: WatchStats | None) -> Callable[[service_pb2.ManifestEvent], str]:
    if stats is not None:
        return stats.json_line if as_json else stats.line
    return format_json if as_json else format_line


def print_table(stats: WatchStats | None, as_json: bool, out: TextIO) -> None:
    if stats is not None and stats.threads:
        print(stats.json_table() if as_json else stats.table(), file=out, flush=True)


async def follow(
    addr: str,
    *,
    token: str = "",
    thread_id: str = "",
    after: int = 0,
    as_json: bool = False,
    count: int = 0,
    out: TextIO = sys.stdout,
    err: TextIO = sys.stderr,
    stats: WatchStats | None = None,
    max_failures: int | None = DEFAULT_MAX_FAILURES,
) -> int:
    """Prints events until `count` were printed (0 = forever); returns the exit status.

    Gives up after `max_failures` reconnects in a row that received nothing (None: never).
    """
    last, printed, backoff, failures = after, 0, FIRST_BACKOFF_SECONDS, 0
    metadata = (("authorization", f"Bearer {token}"),) if token else ()
    render = _renderer(as_json, stats)
    caught_up = False
    thread_known = not thread_id
    async with grpc.aio.insecure_channel(addr) as channel:
        stub = service_grpc.ManifestServiceStub(channel)
        threads = history_service_pb2_grpc.HistoryServiceStub(channel)
        while True:
            request = service_pb2.WatchManifestsRequest(thread_id=thread_id, after_event_id=last)
            try:
                if not thread_known:
                    # A watch of a thread that does not exist would wait in silence for its events.
                    await threads.GetThread(
                        history_service_pb2.GetThreadRequest(thread_id=thread_id),
                        metadata=metadata,
                        timeout=30,
                    )
                    thread_known = True
                call = stub.WatchManifests(request, metadata=metadata)
                async for response in call:
                    backoff, failures = FIRST_BACKOFF_SECONDS, 0
                    if response.HasField("heartbeat"):
                        # Every event of ours up to this id was sent: a safe place to resume.
                        last = max(last, response.heartbeat.last_event_id)
                        if not caught_up:
                            caught_up = True
                            print_table(stats, as_json, out)
                        continue
                    print(render(response.event), file=out, flush=True)
                    last, printed = response.event.event_id, printed + 1
                    if printed == count:
                        call.cancel()
                        print_table(stats, as_json, out)
                        return exits.OK
                return exits.OK
            except grpc.aio.AioRpcError as exc:
                if exc.code() == grpc.StatusCode.NOT_FOUND and not thread_known:
                    return exits.fail(
                        "watch",
                        f"thread {thread_id!r} does not exist (NOT_FOUND): create it first, or leave out "
                        "--thread to watch every thread",
                        exits.FAILURE,
                        err,
                    )
                if exc.code() not in RETRYABLE:
                    return exits.rpc_failed("watch", exc, err, address=addr)
                failures += 1
                down = exits.unreachable(exc)
                if max_failures is not None and failures > max_failures:
                    why = "" if down else f" ({exc.code().name}: {exc.details()})"
                    print(
                        f"pioneer-grpc watch: gave up: {addr} answered nothing in {max_failures} reconnects"
                        f"{why}: is the server running at {addr}? --retry-forever keeps trying",
                        file=err,
                    )
                    return exits.FAILURE
                what = f"no answer from {addr}" if down else f"{exc.code().name}: {exc.details()}"
                print(
                    f"pioneer-grpc watch: {what}; resuming after event {last} in {backoff:.1f}s",
                    file=err,
                    flush=True,
                )
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, MAX_BACKOFF_SECONDS)


def run(args: argparse.Namespace) -> int:
    if args.after < 0 or args.count < 0 or args.max_failures < 0:
        return exits.fail("watch", "--after, --count and --max-failures must not be negative", exits.USAGE)
    stats = WatchStats() if args.stats else None
    try:
        return asyncio.run(
            follow(
                args.addr,
                token=args.token,
                thread_id=args.thread,
                after=args.after,
                as_json=args.json,
                count=args.count,
                out=sys.stdout,
                err=sys.stderr,
                stats=stats,
                max_failures=None if args.retry_forever else args.max_failures,
            )
        )
    except KeyboardInterrupt:
        print_table(stats, args.json, sys.stdout)
        return exits.OK


def main(argv: list[str] | None = None) -> int:
    """`python -m pioneer_grpc.cli.watch ...`, the same as `pioneer-grpc watch ...`."""
    parser = argparse.ArgumentParser(
        prog="pioneer-grpc watch", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    _add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
