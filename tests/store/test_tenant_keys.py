"""Every table that holds a thread id holds its tenant, and every key or foreign key that names
the thread names the tenant too: a table added later keyed by thread without its tenant fails
here (docs/scaling.md, migration 0018)."""

from __future__ import annotations

from sqlalchemy import ForeignKeyConstraint, PrimaryKeyConstraint, UniqueConstraint

from pioneer_grpc.store.models import Base


def _thread_tables() -> list:
    return [t for t in Base.metadata.sorted_tables if "thread_id" in t.columns]


def test_every_table_holding_a_thread_id_holds_its_tenant():
    tables = _thread_tables()
    assert {t.name for t in tables} >= {
        "threads",
        "turns",
        "conversation_entries",
        "tool_calls",
        "thread_summaries",
        "manifest_events",
        "rendered_rounds",
        "round_usage",
    }
    missing = [t.name for t in tables if "tenant" not in t.columns]
    assert missing == []
    assert not any(t.columns["tenant"].nullable for t in tables)


def test_every_key_naming_the_thread_names_the_tenant():
    without = []
    for table in _thread_tables():
        keyed = (PrimaryKeyConstraint, UniqueConstraint, ForeignKeyConstraint)
        for constraint in table.constraints:
            names = {c.name for c in constraint.columns}
            if isinstance(constraint, keyed) and "thread_id" in names and "tenant" not in names:
                without.append(f"{table.name}: {sorted(names)}")
        for index in table.indexes:
            names = {c.name for c in index.columns}
            if index.unique and "thread_id" in names and "tenant" not in names:
                without.append(f"{table.name}: {index.name}")
    assert without == []
    # The thread's own key is (thread id, tenant): two tenants may each have thread "t-1".
    threads = Base.metadata.tables["threads"]
    assert [c.name for c in threads.primary_key.columns] == ["thread_id", "tenant"]
