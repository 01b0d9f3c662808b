"""`pioneer-grpc history THREAD`: what the next history load would send, and why.

    pioneer-grpc history thr_123 --addr 127.0.0.1:50051 [--token T] [--json]

Calls LoadConversationHistory with dry_run on a running server (no summary
model is called, nothing is stored), then prints the decision report and, for
each message, its role, its tokens (overhead included) and its first line.
The token defaults to PIONEER_TOKEN.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
from typing import Any

import grpc

from pioneer_grpc.cli import exits
from pioneer_grpc.cli.address import add_address_argument
from pioneer_grpc.v1 import chat_pb2, history_pb2, history_service_pb2, history_service_pb2_grpc

FIRST_LINE_CHARS = 80
ROLE_NAMES = {
    chat_pb2.CHAT_ROLE_SYSTEM: "system",
    chat_pb2.CHAT_ROLE_USER: "user",
    chat_pb2.CHAT_ROLE_ASSISTANT: "assistant",
    chat_pb2.CHAT_ROLE_TOOL: "tool",
}


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "history",
        help="show what the next history load of a thread would send, and why",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("thread", help="thread id")
    add_address_argument(parser)
    parser.add_argument("--token", default=None, help="bearer token (default: PIONEER_TOKEN)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.set_defaults(func=run)
    return parser


def first_line(text: str) -> str:
    line = next((line for line in text.splitlines() if line.strip()), "")
    return line if len(line) <= FIRST_LINE_CHARS else line[: FIRST_LINE_CHARS - 3] + "..."


def _enum(enum: Any, value: int) -> str:
    """The protobuf name, as protobuf JSON prints it (HISTORY_DECISION_FULL)."""
    return str(enum.Name(value))


def _short(name: str, prefix: str) -> str:
    return name.removeprefix(prefix).lower()


def report_dict(report: history_pb2.HistoryDecisionReport) -> dict[str, Any]:
    return {
        "decision": _enum(history_pb2.HistoryDecision, report.decision),
        "budget_tokens": report.budget_tokens,
        "threshold_tokens": report.threshold_tokens,
        "summary_target_tokens": report.summary_target_tokens,
        "tokens_before": report.tokens_before,
        "tokens_after": report.tokens_after,
        "entries_loaded": report.entries_loaded,
        "entries_kept": report.entries_kept,
        "entries_dropped": report.entries_dropped,
        "summary_use": _enum(history_pb2.SummaryUse, report.summary_use),
        "summarizer": report.summarizer,
        "summary_covers_through_entry_id": report.summary_covers_through_entry_id,
        "tokenizer": report.tokenizer,
        "diagnostics": [
            {
                "code": d.code,
                "message": d.message,
                **({"entry_id": d.entry_id} if d.HasField("entry_id") else {}),
            }
            for d in report.diagnostics
        ],
    }


def message_rows(messages: list[chat_pb2.ChatMessage], tokens: list[int]) -> list[dict[str, Any]]:
    return [
        {"role": ROLE_NAMES.get(m.role, "?"), "tokens": count, "first_line": first_line(m.content)}
        for m, count in zip(messages, tokens, strict=True)
    ]


def render_text(thread_id: str, report: dict[str, Any], rows: list[dict[str, Any]]) -> str:
    lines = [
        f"thread {thread_id}: next load is {_short(report['decision'], 'HISTORY_DECISION_').upper()}",
        f"  budget       {report['budget_tokens']} tokens (threshold {report['threshold_tokens']}, "
        f"summary target {report['summary_target_tokens']})",
        f"  tokens       {report['tokens_before']} loaded -> {report['tokens_after']} sent "
        f"({report['tokenizer']})",
        f"  entries      {report['entries_loaded']} loaded, {report['entries_kept']} kept, "
        f"{report['entries_dropped']} dropped",
        f"  summary      {_short(report['summary_use'], 'SUMMARY_USE_')}"
        + (f" by {report['summarizer']}" if report["summarizer"] else "")
        + (
            f", covers through {report['summary_covers_through_entry_id']}"
            if report["summary_covers_through_entry_id"]
            else ""
        ),
    ]
    for diagnostic in report["diagnostics"]:
        where = f" [{diagnostic['entry_id']}]" if "entry_id" in diagnostic else ""
        lines.append(f"  note         {diagnostic['code']}{where}: {diagnostic['message']}")
    lines.append(f"messages ({len(rows)}):")
    for index, row in enumerate(rows, start=1):
        lines.append(f"  {index:>4}  {row['role']:<9} {row['tokens']:>7}  {row['first_line']}")
    return "\n".join(lines)


async def describe(address: str, thread_id: str, token: str = "", as_json: bool = False) -> str:
    """The report for `thread_id` as text or JSON; raises grpc.aio.AioRpcError on RPC failure."""
    metadata = (("authorization", f"Bearer {token}"),) if token else ()
    async with grpc.aio.insecure_channel(address) as channel:
        history = history_service_pb2_grpc.HistoryServiceStub(channel)
        response = await history.LoadConversationHistory(
            history_service_pb2.LoadConversationHistoryRequest(thread_id=thread_id, dry_run=True),
            metadata=metadata,
            timeout=30,
        )
        messages = list(response.messages)
        counted = await history.CountTokens(
            history_service_pb2.CountTokensRequest(messages=messages), metadata=metadata, timeout=30
        )
    report = report_dict(response.report)
    rows = message_rows(messages, list(counted.token_counts))
    if as_json:
        return json.dumps(
            {"thread_id": thread_id, "report": report, "messages": rows}, indent=2, ensure_ascii=False
        )
    return render_text(thread_id, report, rows)


def run(args: argparse.Namespace) -> int:
    token = args.token if args.token is not None else os.environ.get("PIONEER_TOKEN", "")
    try:
        print(asyncio.run(describe(args.addr, args.thread, token, args.json)))
    except grpc.aio.AioRpcError as error:
        return exits.rpc_failed("history", error, address=args.addr)
    return exits.OK
