"""`pioneer-grpc threads delete|fork|abandon`: a stored thread's life, on a running server.

    pioneer-grpc threads delete thr_123 [thr_456 ...] --addr 127.0.0.1:50051 [--token T] [--allow-missing]
        [--etag E]
    pioneer-grpc threads fork thr_123 --turn turn_7 [--thread-id thr_123_b] [--model M]
    pioneer-grpc threads abandon thr_123 turn_8 [--allow-missing]

delete calls DeleteThread for each thread, in order: one transaction each, all of a thread or
nothing of it. A thread that does not exist fails the command (status 1) unless --allow-missing,
which makes a repeat of the same command succeed; --etag (Thread.etag, one thread) deletes only
the thread as it was read. fork calls ForkThread: a new thread holding the source up to and
including a completed turn (--model replays it against another model). abandon calls
AbandonTurn: an open turn's entries and manifests dropped. The token defaults to PIONEER_TOKEN.
"""

from __future__ import annotations

import argparse
import asyncio
import os

import grpc

from pioneer_grpc.cli import exits, thread_files
from pioneer_grpc.cli.address import add_address_argument
from pioneer_grpc.cli.thread_files import bearer
from pioneer_grpc.v1 import history_service_pb2, history_service_pb2_grpc


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "threads", help="manage stored threads (delete, fork, abandon, export, import)", description=__doc__
    )
    verbs = parser.add_subparsers(dest="verb", required=True)
    delete = verbs.add_parser(
        "delete",
        help="delete threads and everything stored for them",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    delete.add_argument("threads", nargs="+", metavar="thread", help="thread id")
    add_address_argument(delete)
    delete.add_argument("--token", default=None, help="bearer token (default: PIONEER_TOKEN)")
    delete.add_argument(
        "--allow-missing", action="store_true", help="a thread that does not exist is no error"
    )
    delete.add_argument("--etag", default="", help="delete only the thread as read (Thread.etag)")
    delete.set_defaults(func=run_delete)
    fork = _verb(verbs, "fork", "copy a thread up to a completed turn into a new thread")
    fork.add_argument("source", help="the thread copied")
    fork.add_argument("--turn", required=True, help="the last turn copied (a completed turn)")
    fork.add_argument("--thread-id", default="", help="the new thread's id (default: the server names it)")
    fork.add_argument("--model", default="", help="the new thread's model (default: the source's)")
    fork.set_defaults(func=run_fork)
    abandon = _verb(verbs, "abandon", "drop an open turn's entries and manifests")
    abandon.add_argument("thread", help="thread id")
    abandon.add_argument("turn", help="the open turn dropped")
    abandon.add_argument("--allow-missing", action="store_true", help="no error for a missing turn")
    abandon.set_defaults(func=run_abandon)
    thread_files.add_verbs(verbs)
    return parser


def _verb(
    verbs: argparse._SubParsersAction[argparse.ArgumentParser], name: str, help: str
) -> argparse.ArgumentParser:
    parser = verbs.add_parser(
        name, help=help, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    add_address_argument(parser)
    parser.add_argument("--token", default=None, help="bearer token (default: PIONEER_TOKEN)")
    return parser


async def delete(
    address: str, thread_ids: list[str], token: str = "", allow_missing: bool = False, etag: str = ""
) -> list[str]:
    """A line per thread saying what was done; raises grpc.aio.AioRpcError on the first RPC failure."""
    lines = []
    async with grpc.aio.insecure_channel(address) as channel:
        history = history_service_pb2_grpc.HistoryServiceStub(channel)
        for thread_id in thread_ids:
            request = history_service_pb2.DeleteThreadRequest(
                thread_id=thread_id, allow_missing=allow_missing, etag=etag
            )
            response = await history.DeleteThread(request, metadata=bearer(token), timeout=30)
            lines.append(f"{thread_id}: {'deleted' if response.deleted else 'did not exist'}")
    return lines


async def fork(
    address: str, source: str, turn_id: str, token: str = "", thread_id: str = "", model: str = ""
) -> str:
    """The line saying what was made; raises grpc.aio.AioRpcError."""
    request = history_service_pb2.ForkThreadRequest(
        source_thread_id=source, source_turn_id=turn_id, thread_id=thread_id
    )
    if model:
        request.config.model = model
        request.config_mask.paths.append("model")
    async with grpc.aio.insecure_channel(address) as channel:
        history = history_service_pb2_grpc.HistoryServiceStub(channel)
        response = await history.ForkThread(request, metadata=bearer(token), timeout=60)
    copied = response.thread
    return (
        f"{copied.thread_id}: forked from {source} through {turn_id} "
        f"({response.turn_count} turns, {copied.entry_count} entries, {response.summary_count} summaries)"
    )


async def abandon(
    address: str, thread_id: str, turn_id: str, token: str = "", allow_missing: bool = False
) -> str:
    """The line saying what was done; raises grpc.aio.AioRpcError."""
    request = history_service_pb2.AbandonTurnRequest(
        thread_id=thread_id, turn_id=turn_id, allow_missing=allow_missing
    )
    async with grpc.aio.insecure_channel(address) as channel:
        history = history_service_pb2_grpc.HistoryServiceStub(channel)
        response = await history.AbandonTurn(request, metadata=bearer(token), timeout=30)
    if not response.abandoned:
        return f"{thread_id} {turn_id}: did not exist"
    return f"{thread_id} {turn_id}: abandoned ({response.dropped_entry_count} entries dropped)"


def _token(args: argparse.Namespace) -> str:
    return str(args.token if args.token is not None else os.environ.get("PIONEER_TOKEN", ""))


def run_delete(args: argparse.Namespace) -> int:
    if args.etag and len(args.threads) > 1:
        return exits.fail("threads delete", "--etag names one thread's state: give one thread", exits.USAGE)
    try:
        for line in asyncio.run(delete(args.addr, args.threads, _token(args), args.allow_missing, args.etag)):
            print(line)
    except grpc.aio.AioRpcError as error:
        return exits.rpc_failed("threads delete", error, address=args.addr)
    return exits.OK


def run_fork(args: argparse.Namespace) -> int:
    try:
        print(asyncio.run(fork(args.addr, args.source, args.turn, _token(args), args.thread_id, args.model)))
    except grpc.aio.AioRpcError as error:
        return exits.rpc_failed("threads fork", error, address=args.addr)
    return exits.OK


def run_abandon(args: argparse.Namespace) -> int:
    try:
        print(asyncio.run(abandon(args.addr, args.thread, args.turn, _token(args), args.allow_missing)))
    except grpc.aio.AioRpcError as error:
        return exits.rpc_failed("threads abandon", error, address=args.addr)
    return exits.OK
