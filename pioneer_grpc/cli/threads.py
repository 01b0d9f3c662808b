"""`pioneer-grpc threads delete THREAD...`: delete threads and everything stored for them.

    pioneer-grpc threads delete thr_123 [thr_456 ...] --addr 127.0.0.1:50051 [--token T] [--allow-missing]

Calls DeleteThread on a running server for each thread, in order: one transaction each,
all of a thread or nothing of it. A thread that does not exist fails the command (status 1)
unless --allow-missing, which makes a repeat of the same command succeed. The token
defaults to PIONEER_TOKEN.
"""

from __future__ import annotations

import argparse
import asyncio
import os

import grpc

from pioneer_grpc.cli import exits
from pioneer_grpc.cli.address import add_address_argument
from pioneer_grpc.v1 import history_service_pb2, history_service_pb2_grpc


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    parser = subparsers.add_parser("threads", help="manage stored threads (delete)", description=__doc__)
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
    delete.set_defaults(func=run_delete)
    return parser


async def delete(
    address: str, thread_ids: list[str], token: str = "", allow_missing: bool = False
) -> list[str]:
    """A line per thread saying what was done; raises grpc.aio.AioRpcError on the first RPC failure."""
    metadata = (("authorization", f"Bearer {token}"),) if token else ()
    lines = []
    async with grpc.aio.insecure_channel(address) as channel:
        history = history_service_pb2_grpc.HistoryServiceStub(channel)
        for thread_id in thread_ids:
            response = await history.DeleteThread(
                history_service_pb2.DeleteThreadRequest(thread_id=thread_id, allow_missing=allow_missing),
                metadata=metadata,
                timeout=30,
            )
            lines.append(f"{thread_id}: {'deleted' if response.deleted else 'did not exist'}")
    return lines


def run_delete(args: argparse.Namespace) -> int:
    token = args.token if args.token is not None else os.environ.get("PIONEER_TOKEN", "")
    try:
        for line in asyncio.run(delete(args.addr, args.threads, token, args.allow_missing)):
            print(line)
    except grpc.aio.AioRpcError as error:
        return exits.rpc_failed("threads delete", error, address=args.addr)
    return exits.OK
