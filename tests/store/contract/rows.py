"""What the contract tests append and record: entries of real shape, counted; manifests prepared."""

from __future__ import annotations

from pioneer_grpc.history.entries import content_hash
from pioneer_grpc.store.manifests import prepare_manifest
from pioneer_grpc.store.port import (
    AppendBatch,
    HistoryAsk,
    NewEntry,
    OpenedRound,
    PreparedManifest,
    RoundAsk,
    RoundCommit,
    RoundPrepared,
    Store,
)
from pioneer_grpc.v1 import history_pb2, prompt_pb2

USER = history_pb2.ENTRY_ROLE_USER
ASSISTANT = history_pb2.ENTRY_ROLE_ASSISTANT
TOOL = history_pb2.ENTRY_ROLE_TOOL
CL100K = "cl100k_base"
O200K = "o200k_base"


def config(model: str = "", **settings: int) -> history_pb2.ThreadConfig:
    found = history_pb2.ThreadConfig(max_context_tokens=8000, response_reserve_tokens=1000, model=model)
    for name, value in settings.items():
        setattr(found, name, value)
    return found


def user(entry_id: str, turn_id: str, text: str = "hello") -> history_pb2.ConversationEntry:
    return history_pb2.ConversationEntry(entry_id=entry_id, turn_id=turn_id, role=USER, content=text)


def answer(entry_id: str, turn_id: str, text: str = "done") -> history_pb2.ConversationEntry:
    return history_pb2.ConversationEntry(entry_id=entry_id, turn_id=turn_id, role=ASSISTANT, content=text)


def call(entry_id: str, turn_id: str, call_id: str, name: str = "read_file") -> history_pb2.ConversationEntry:
    entry = history_pb2.ConversationEntry(entry_id=entry_id, turn_id=turn_id, role=ASSISTANT)
    entry.tool_calls.add(id=call_id, name=name, arguments='{"path": "a.txt"}')
    return entry


def result(
    entry_id: str, turn_id: str, call_id: str, name: str = "read_file"
) -> history_pb2.ConversationEntry:
    return history_pb2.ConversationEntry(
        entry_id=entry_id,
        turn_id=turn_id,
        role=TOOL,
        tool_call_id=call_id,
        name=name,
        content="text of a.txt",
    )


def counted(*entries: history_pb2.ConversationEntry, tokens: int = 7) -> list[NewEntry]:
    return [NewEntry(entry, content_hash(entry), tokens + i) for i, entry in enumerate(entries)]


def batch(thread_id: str, *entries: history_pb2.ConversationEntry, **options: object) -> AppendBatch:
    tokenizer = str(options.pop("tokenizer", CL100K))
    model = options.pop("model", "")
    return AppendBatch(thread_id, counted(*entries), tokenizer, model, **options)  # type: ignore[arg-type]


def manifest(thread_id: str, turn_id: str, stable: str = "s1") -> PreparedManifest:
    found = prompt_pb2.PromptManifest(
        compiler_version="test-1",
        profile=prompt_pb2.PROMPT_PROFILE_FULL,
        section_ids=["identity", "tools"],
        fingerprint_stable=stable,
        fingerprint_dynamic="d1",
        fingerprint_full=stable + "d1",
    )
    return prepare_manifest(thread_id, turn_id, found)


async def turn(store: Store, thread_id: str, turn_id: str, *entries: history_pb2.ConversationEntry) -> None:
    """A whole turn: its entries appended, then the turn completed."""
    await store.entries.append(batch(thread_id, *entries))
    await store.turns.complete(thread_id, turn_id)


def round_ask(turn_id: str, call_ids: tuple[str, ...] = (), entry_ids: tuple[str, ...] = ()) -> RoundAsk:
    """What a round of turn `turn_id` of thread "t" reads."""
    return RoundAsk("t", turn_id, HistoryAsk("t", turn_id), call_ids, entry_ids)


def round_commit(
    opened: OpenedRound,
    turn_id: str,
    *entries: history_pb2.ConversationEntry,
    stable: str = "s1",
    prepared: RoundPrepared | None = None,
) -> RoundCommit:
    """The commit of a round `opened` read on thread "t": `entries` appended, its manifest, its row
    on the timeline when `prepared`."""
    return RoundCommit(
        "t",
        turn_id,
        opened.version,
        None if opened.turn is None else opened.turn.status,
        manifest("t", turn_id, stable),
        counted(*entries),
        CL100K,
        opens_turn=not opened.turn_entries,
        round=prepared,
    )
