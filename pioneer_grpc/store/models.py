"""Tables of the store. One schema serves SQLite (default) and PostgreSQL.

Entries, summaries and manifest events are append-only: nothing here is
deleted by a load. `conversation_entries.id` is the entry's `sequence`: a global
autoincrement, so it orders a thread's entries without a per-thread counter.

Every thread belongs to one tenant, and a thread id is unique within its tenant
only: `tenant` is in the key of the thread table and of every table keyed by
thread, and in their foreign keys (migration 0018), so a distributed PostgreSQL can
place a tenant's rows together by it (docs/scaling.md). It follows the thread id:
a thread's rows are found by its id first, as before.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import (
    BigInteger,
    Boolean,
    DateTime,
    ForeignKey,
    ForeignKeyConstraint,
    Index,
    Integer,
    LargeBinary,
    String,
    Text,
    UniqueConstraint,
    false,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

# Tenant names come from the tenants file; rows stored before tenants existed are the default's.
TENANT_LENGTH = 100


def tenant_column(primary_key: bool = False) -> Mapped[str]:
    return mapped_column(String(TENANT_LENGTH), primary_key=primary_key, server_default="default")


def of_thread(table: str) -> ForeignKeyConstraint:
    """The row's thread, named by id and tenant."""
    return ForeignKeyConstraint(
        ["thread_id", "tenant"],
        ["threads.thread_id", "threads.tenant"],
        ondelete="CASCADE",
        name=f"fk_{table}_thread",
    )


# SQLite only autoincrements an INTEGER PRIMARY KEY; PostgreSQL wants BIGINT.
Id = BigInteger().with_variant(Integer(), "sqlite")


class Base(DeclarativeBase):
    pass


class ThreadRow(Base):
    __tablename__ = "threads"
    # Threads newest first (ListThreads by create_time desc) read it backwards (migration 0008).
    __table_args__ = (
        Index("ix_threads_created_at", "created_at", "thread_id"),
        # ListThreads by update time, and filtered by model in that order (migration 0020).
        Index("ix_threads_updated_at", "updated_at", "thread_id"),
        Index("ix_threads_model_updated_at", "model", "updated_at", "thread_id"),
        # The retention sweeper's: expired threads of one retention, oldest write first (migration 0019).
        Index("ix_threads_retention", "retention_days", "updated_at", "thread_id"),
    )

    thread_id: Mapped[str] = mapped_column(String(200), primary_key=True)
    tenant: Mapped[str] = tenant_column(primary_key=True)
    max_context_tokens: Mapped[int] = mapped_column(Integer)
    response_reserve_tokens: Mapped[int] = mapped_column(Integer)
    model: Mapped[str] = mapped_column(String(200), default="")
    summary_model: Mapped[str] = mapped_column(String(200), default="")
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    # pioneer.v1.CompactionStrategy value; 0 (unspecified) means the default.
    compaction_strategy: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    # Tool results kept whole when older ones are cleared; NULL means the default.
    keep_tool_results: Mapped[int | None] = mapped_column(Integer, nullable=True)
    # The newest entry sequence a failed compaction covered: not retried until the history grows.
    compaction_failed_sequence: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    # Entries of turns not completed, and how many turns they belong to: kept by every append and
    # completion in its own transaction (migration 0006), so a load need not count them.
    open_entries: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    open_turns: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    # Completed entries: kept by every completion in its own transaction (migration 0011), so the
    # history state (store/history_state.py) need not count them.
    completed_entries: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    # Compaction's trigger and low-water mark and clearing's least, in percent of the budget;
    # NULL means the default (migration 0014).
    compaction_trigger_percent: Mapped[int | None] = mapped_column(Integer, nullable=True)
    compaction_low_water_percent: Mapped[int | None] = mapped_column(Integer, nullable=True)
    clear_at_least_percent: Mapped[int | None] = mapped_column(Integer, nullable=True)
    # pioneer.v1.DynamicContextPlacement value; 0 (unspecified) means the default.
    dynamic_context_placement: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    # Days without a write after which the sweeper deletes the thread; NULL: the server's
    # --retention-days, 0: never (migration 0019).
    retention_days: Mapped[int | None] = mapped_column(Integer, nullable=True)


class TurnRow(Base):
    __tablename__ = "turns"
    __table_args__ = (of_thread("turns"),)

    thread_id: Mapped[str] = mapped_column(String(200), primary_key=True)
    turn_id: Mapped[str] = mapped_column(String(200), primary_key=True)
    tenant: Mapped[str] = tenant_column(primary_key=True)
    # pioneer.v1.TurnStatus value.
    status: Mapped[int] = mapped_column(Integer)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    # The original's turn columns: the manifest is metadata, not the prompt text.
    prompt_manifest_json: Mapped[str | None] = mapped_column(Text, nullable=True)
    prompt_compiler_version: Mapped[str | None] = mapped_column(String(64), nullable=True)
    prompt_profile: Mapped[str | None] = mapped_column(String(64), nullable=True)
    prompt_fingerprint_stable: Mapped[str | None] = mapped_column(String(64), nullable=True)
    prompt_fingerprint_dynamic: Mapped[str | None] = mapped_column(String(64), nullable=True)
    prompt_fingerprint_full: Mapped[str | None] = mapped_column(String(64), nullable=True)
    manifest_event_id: Mapped[int | None] = mapped_column(BigInteger, nullable=True)


class EntryRow(Base):
    __tablename__ = "conversation_entries"
    __table_args__ = (
        UniqueConstraint("thread_id", "entry_id", "tenant", name="uq_entries_thread_entry"),
        Index("ix_entries_thread_completed_id", "thread_id", "completed", "id"),
        # Counts entries of turns not completed without reading their rows (migration 0004).
        Index("ix_entries_thread_completed_turn", "thread_id", "completed", "turn_id"),
        Index("ix_entries_thread_turn", "thread_id", "turn_id"),
        of_thread("conversation_entries"),
    )

    id: Mapped[int] = mapped_column(Id, primary_key=True, autoincrement=True)
    thread_id: Mapped[str] = mapped_column(String(200))
    tenant: Mapped[str] = tenant_column()
    entry_id: Mapped[str] = mapped_column(String(200))
    turn_id: Mapped[str] = mapped_column(String(200))
    # pioneer.v1.EntryRole value.
    role: Mapped[int] = mapped_column(Integer)
    content: Mapped[str] = mapped_column(Text, default="")
    tool_calls_json: Mapped[str] = mapped_column(Text, default="[]")
    tool_call_id: Mapped[str] = mapped_column(String(200), default="")
    name: Mapped[str] = mapped_column(String(200), default="")
    artifact_refs_json: Mapped[str] = mapped_column(Text, default="[]")
    reasoning_content: Mapped[str | None] = mapped_column(Text, nullable=True)
    # Content parts (text, images, documents) serialized as ChatMessage.content_parts; NULL
    # without any (migration 0008).
    content_parts_pb: Mapped[bytes | None] = mapped_column(LargeBinary, nullable=True)
    # A tool result that reports its tool failed (ConversationEntry.is_error; migration 0017).
    is_error: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    # sha256 of the entry's canonical content: an idempotent repeat must match it.
    content_hash: Mapped[str] = mapped_column(String(64))
    # Counted once at append with `tokenizer` (the thread model's then); counts in other
    # tokenizers are in entry_token_counts. A load never re-tokenizes a counted entry.
    token_count: Mapped[int] = mapped_column(Integer)
    tokenizer: Mapped[str] = mapped_column(String(64))
    completed: Mapped[bool] = mapped_column(Boolean, default=False)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class ToolCallRow(Base):
    """Every tool call a thread's entries made. An id is unique among one entry's calls only:
    models reuse ids across turns (migration 0007)."""

    __tablename__ = "tool_calls"
    __table_args__ = (of_thread("tool_calls"),)

    thread_id: Mapped[str] = mapped_column(String(200), primary_key=True)
    call_id: Mapped[str] = mapped_column(String(200), primary_key=True)
    entry_id: Mapped[str] = mapped_column(String(200), primary_key=True)
    tenant: Mapped[str] = tenant_column(primary_key=True)


class SummaryRow(Base):
    __tablename__ = "thread_summaries"
    __table_args__ = (Index("ix_summaries_thread_id", "thread_id", "id"), of_thread("thread_summaries"))

    id: Mapped[int] = mapped_column(Id, primary_key=True, autoincrement=True)
    thread_id: Mapped[str] = mapped_column(String(200))
    tenant: Mapped[str] = tenant_column()
    text: Mapped[str] = mapped_column(Text)
    # The newest entry (by sequence) the summary covers; later loads send only newer ones.
    covers_through_sequence: Mapped[int] = mapped_column(BigInteger)
    covers_through_entry_id: Mapped[str] = mapped_column(String(200))
    token_count: Mapped[int] = mapped_column(Integer)
    model: Mapped[str] = mapped_column(String(200), default="")
    summarizer: Mapped[str] = mapped_column(String(64), default="")
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    # The tokenizer of token_count; "" for summaries stored before it was recorded.
    tokenizer: Mapped[str] = mapped_column(String(64), default="", server_default="")


class EntryCountRow(Base):
    """An entry's token count in a tokenizer other than the one it was appended in.

    Made once, by the first load that budgets the entry in that tokenizer (its thread
    moved to a model of another family), and read by every later one.
    """

    __tablename__ = "entry_token_counts"

    entry_sequence: Mapped[int] = mapped_column(
        Id, ForeignKey("conversation_entries.id", ondelete="CASCADE"), primary_key=True
    )
    tokenizer: Mapped[str] = mapped_column(String(64), primary_key=True)
    token_count: Mapped[int] = mapped_column(Integer)


class SummaryCountRow(Base):
    """A summary's token count in a tokenizer other than the one it was stored in."""

    __tablename__ = "summary_token_counts"

    summary_id: Mapped[int] = mapped_column(
        Id, ForeignKey("thread_summaries.id", ondelete="CASCADE"), primary_key=True
    )
    tokenizer: Mapped[str] = mapped_column(String(64), primary_key=True)
    token_count: Mapped[int] = mapped_column(Integer)


class ManifestEventRow(Base):
    __tablename__ = "manifest_events"
    __table_args__ = (Index("ix_manifest_events_thread_id", "thread_id", "id"),)

    id: Mapped[int] = mapped_column(Id, primary_key=True, autoincrement=True)
    thread_id: Mapped[str] = mapped_column(String(200))
    tenant: Mapped[str] = tenant_column()
    turn_id: Mapped[str] = mapped_column(String(200))
    # Serialized pioneer.v1.PromptManifest (binary): streamed without re-encoding.
    manifest_pb: Mapped[bytes] = mapped_column(LargeBinary)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
