"""`pioneer-grpc threads export|import`: a thread to a JSON Lines file and back (docs/export-format.md).

    pioneer-grpc threads export thr_123 -o thr_123.jsonl --addr 127.0.0.1:50051 [--token T]
    pioneer-grpc threads import thr_123.jsonl [--thread-id copy_of_123] --addr 127.0.0.1:50051

An export is written to FILE.partial and renamed to FILE once the server sent all of it, so FILE
is whole or absent ("-" writes to standard output). An import sends the file in pieces; the
server writes nothing until it has read and checked all of it, then the whole thread in one
transaction. The token defaults to PIONEER_TOKEN.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import BinaryIO

import grpc

from pioneer_grpc.cli import exits
from pioneer_grpc.cli.address import add_address_argument
from pioneer_grpc.v1 import history_service_pb2, history_service_pb2_grpc

IMPORT_CHUNK_BYTES = 1024 * 1024


def add_verbs(verbs: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    export = verbs.add_parser(
        "export",
        help="write a thread as JSON Lines",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    export.add_argument("thread", help="thread id")
    export.add_argument("-o", "--output", default="-", help="file to write (default: standard output)")
    imported = verbs.add_parser(
        "import",
        help="store a thread from a JSON Lines export",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    imported.add_argument("file", help="the export ('-': standard input)")
    imported.add_argument("--thread-id", default="", help="store it under this id (default: the export's)")
    for parser in (export, imported):
        add_address_argument(parser)
        parser.add_argument("--token", default=None, help="bearer token (default: PIONEER_TOKEN)")
    export.set_defaults(func=run_export)
    imported.set_defaults(func=run_import)


def bearer(token: str) -> tuple[tuple[str, str], ...]:
    """The call metadata carrying `token` (none without one)."""
    return (("authorization", f"Bearer {token}"),) if token else ()


async def export(address: str, thread_id: str, out: BinaryIO, token: str = "") -> int:
    """Writes the thread's export to `out`; its size in bytes. Raises grpc.aio.AioRpcError."""
    size = 0
    async with grpc.aio.insecure_channel(address) as channel:
        history = history_service_pb2_grpc.HistoryServiceStub(channel)
        request = history_service_pb2.ExportThreadRequest(thread_id=thread_id)
        async for response in history.ExportThread(request, metadata=bearer(token)):
            out.write(response.chunk)
            size += len(response.chunk)
    return size


def _pieces(source: BinaryIO, thread_id: str) -> Iterator[history_service_pb2.ImportThreadRequest]:
    first = True
    while True:
        piece = source.read(IMPORT_CHUNK_BYTES)
        if not piece and not first:
            return
        yield history_service_pb2.ImportThreadRequest(thread_id=thread_id if first else "", chunk=piece)
        first = False
        if not piece:
            return


async def import_file(
    address: str, source: BinaryIO, thread_id: str = "", token: str = ""
) -> history_service_pb2.ImportThreadResponse:
    async def requests() -> AsyncIterator[history_service_pb2.ImportThreadRequest]:
        for request in _pieces(source, thread_id):
            yield request

    async with grpc.aio.insecure_channel(address) as channel:
        history = history_service_pb2_grpc.HistoryServiceStub(channel)
        response: history_service_pb2.ImportThreadResponse = await history.ImportThread(
            requests(), metadata=bearer(token)
        )
        return response


def _token(args: argparse.Namespace) -> str:
    return str(args.token if args.token is not None else os.environ.get("PIONEER_TOKEN", ""))


def run_export(args: argparse.Namespace) -> int:
    try:
        if args.output == "-":
            asyncio.run(export(args.addr, args.thread, sys.stdout.buffer, _token(args)))
            return exits.OK
        target = Path(args.output)
        partial = target.with_name(target.name + ".partial")
        try:
            with partial.open("wb") as out:
                size = asyncio.run(export(args.addr, args.thread, out, _token(args)))
            partial.replace(target)
        finally:
            partial.unlink(missing_ok=True)
    except grpc.aio.AioRpcError as error:
        return exits.rpc_failed("threads export", error, address=args.addr)
    print(f"{args.thread}: {size:,} bytes to {target}", file=sys.stderr)
    return exits.OK


def run_import(args: argparse.Namespace) -> int:
    try:
        if args.file == "-":
            response = asyncio.run(import_file(args.addr, sys.stdin.buffer, args.thread_id, _token(args)))
        else:
            with open(args.file, "rb") as source:
                response = asyncio.run(import_file(args.addr, source, args.thread_id, _token(args)))
    except grpc.aio.AioRpcError as error:
        return exits.rpc_failed("threads import", error, address=args.addr)
    thread = response.thread
    print(
        f"{thread.thread_id}: imported {thread.entry_count} entries, {response.turn_count} turns,"
        f" {response.summary_count} summaries"
    )
    return exits.OK
