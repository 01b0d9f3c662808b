"""Section texts kept by fingerprint, so a diff of two manifests can show the lines that changed.

A manifest names each section's fingerprint (sha256 of its rendered text); the text itself is kept
once per thread and fingerprint, the first time a compile of the thread produced it, written in the
round's own transaction (RoundCommit.texts). A section that stays the same costs nothing after its
first round; a text changing every round costs one row per round. Rows belong to their thread (a
foreign key with ON DELETE CASCADE, and store/lifecycle.py THREAD_ROWS): a deleted thread leaves
none behind, and no other thread's manifest refers to them.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from datetime import datetime

from sqlalchemy import DateTime, String, Text, select, text
from sqlalchemy.engine import Connection
from sqlalchemy.orm import Mapped, mapped_column

from pioneer_grpc.store.models import Base, of_thread, tenant_column


class SectionTextRow(Base):
    __tablename__ = "section_texts"
    __table_args__ = (of_thread("section_texts"),)

    thread_id: Mapped[str] = mapped_column(String(200), primary_key=True)
    tenant: Mapped[str] = tenant_column(primary_key=True)
    fingerprint: Mapped[str] = mapped_column(String(64), primary_key=True)
    text: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


# Built once; an INSERT ... SELECT from the thread's row, so a thread that is not there keeps nothing.
_KEEP = text(
    "INSERT INTO section_texts (thread_id, tenant, fingerprint, text, created_at) "
    "SELECT thread_id, tenant, :fingerprint, :text, :created FROM threads "
    "WHERE thread_id = :thread_id AND tenant = :tenant "
    "ON CONFLICT DO NOTHING"
)


def keep_in(
    conn: Connection, tenant: str, thread_id: str, texts: Mapping[str, str], created: datetime
) -> None:
    """Each text not kept yet for the thread, in the caller's transaction; nothing when the thread
    does not exist. A thread deleted between the select and the insert fails the foreign key:
    IntegrityError, for the caller."""
    if texts:
        conn.execute(
            _KEEP,
            [
                {
                    "thread_id": thread_id,
                    "tenant": tenant,
                    "fingerprint": fingerprint,
                    "text": value,
                    "created": created,
                }
                for fingerprint, value in texts.items()
            ],
        )


def texts_in(conn: Connection, tenant: str, thread_id: str, fingerprints: Collection[str]) -> dict[str, str]:
    """The thread's kept texts of `fingerprints`, by fingerprint (a text not kept is left out)."""
    if not fingerprints:
        return {}
    rows = conn.execute(
        select(SectionTextRow.fingerprint, SectionTextRow.text).where(
            SectionTextRow.thread_id == thread_id,
            SectionTextRow.tenant == tenant,
            SectionTextRow.fingerprint.in_(list(fingerprints)),
        )
    )
    return {row.fingerprint: row.text for row in rows}
