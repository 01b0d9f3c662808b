"""Section texts kept by fingerprint, so a diff of two manifests can show the lines that changed.

A manifest names each section's fingerprint (sha256 of its rendered text); the text itself is kept
once per thread and fingerprint, the first time a compile of the thread produced it. A section that
stays the same costs nothing after its first round; a text changing every round costs one row per
round. Rows belong to their thread (a foreign key with ON DELETE CASCADE, and store/lifecycle.py
THREAD_ROWS): a deleted thread leaves none behind, and no other thread's manifest refers to them.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from datetime import datetime

from sqlalchemy import DateTime, ForeignKey, String, Text, literal, select
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.engine import Connection
from sqlalchemy.orm import Mapped, mapped_column

from pioneer_grpc.store.models import Base, ThreadRow


class SectionTextRow(Base):
    __tablename__ = "section_texts"

    thread_id: Mapped[str] = mapped_column(
        String(200), ForeignKey("threads.thread_id", ondelete="CASCADE"), primary_key=True
    )
    fingerprint: Mapped[str] = mapped_column(String(64), primary_key=True)
    text: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


def keep_in(conn: Connection, thread_id: str, texts: Mapping[str, str], created: datetime) -> None:
    """Each text not kept yet for the thread; nothing when the thread does not exist. A thread deleted
    between the select and the insert fails the foreign key: IntegrityError, for the caller."""
    if not texts:
        return
    insert = pg_insert if conn.dialect.name == "postgresql" else sqlite_insert
    for fingerprint, text in texts.items():
        source = select(
            ThreadRow.thread_id,
            literal(fingerprint),
            literal(text),
            literal(created, DateTime(timezone=True)),
        ).where(ThreadRow.thread_id == thread_id)
        statement = (
            insert(SectionTextRow)
            .from_select(["thread_id", "fingerprint", "text", "created_at"], source)
            .on_conflict_do_nothing()
        )
        conn.execute(statement)


def texts_in(conn: Connection, thread_id: str, fingerprints: Collection[str]) -> dict[str, str]:
    """The thread's kept texts of `fingerprints`, by fingerprint (a text not kept is left out)."""
    if not fingerprints:
        return {}
    rows = conn.execute(
        select(SectionTextRow.fingerprint, SectionTextRow.text).where(
            SectionTextRow.thread_id == thread_id, SectionTextRow.fingerprint.in_(list(fingerprints))
        )
    )
    return {row.fingerprint: row.text for row in rows}
