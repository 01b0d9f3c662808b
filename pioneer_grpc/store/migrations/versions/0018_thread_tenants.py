"""Every thread belongs to a tenant; a thread id is unique within its tenant only.

Each table keyed by thread gets a `tenant` column, in its key and its foreign key
to the thread, after the thread id (so every statement still finds a thread's rows
by its id first, with the plans it has); rows already stored are the default
tenant's. The indexes stay as they are.
PostgreSQL alters the tables in place. SQLite cannot change a key in place: the
tables are copied into new ones and swapped, the children dropped before their
parents so that no ON DELETE CASCADE fires (foreign keys stay on).

Revision ID: 0018_thread_tenants
Revises: 0017_entry_is_error
"""

import sqlalchemy as sa
from alembic import op

revision = "0018_thread_tenants"
down_revision = "0017_entry_is_error"

DEFAULT_TENANT = "default"

# Table -> its new primary key (None: it keeps its id) and unique key.
_KEYED_BY_THREAD: dict[str, tuple[tuple[str, ...] | None, tuple[str, ...] | None]] = {
    "threads": (("thread_id", "tenant"), None),
    "turns": (("thread_id", "turn_id", "tenant"), None),
    "conversation_entries": (None, ("thread_id", "entry_id", "tenant")),
    "tool_calls": (("thread_id", "call_id", "entry_id", "tenant"), None),
    "thread_summaries": (None, None),
}
_CHILDREN = ("turns", "conversation_entries", "tool_calls", "thread_summaries")
# Tables with a thread id and no foreign key: a column only.
_UNLINKED = ("manifest_events", "rendered_rounds", "round_usage")
# The indexes of the tables SQLite rebuilds, made again as they were.
_INDEXES: dict[str, dict[str, tuple[str, ...]]] = {
    "threads": {"ix_threads_created_at": ("created_at", "thread_id")},
    "conversation_entries": {
        "ix_entries_thread_completed_id": ("thread_id", "completed", "id"),
        "ix_entries_thread_completed_turn": ("thread_id", "completed", "turn_id"),
        "ix_entries_thread_turn": ("thread_id", "turn_id"),
    },
    "thread_summaries": {"ix_summaries_thread_id": ("thread_id", "id")},
}
# Copied as they are on SQLite: they refer to entries and summaries, which are rebuilt.
_COUNTS = ("entry_token_counts", "summary_token_counts")
_COUNTS_PARENTS = ("conversation_entries", "thread_summaries")


def _tenant() -> sa.Column[str]:
    return sa.Column("tenant", sa.String(100), nullable=False, server_default=DEFAULT_TENANT)


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        _upgrade_in_place()
    else:
        _upgrade_by_copy()
        for table in _UNLINKED:
            op.add_column(table, _tenant())


def _upgrade_in_place() -> None:
    inspector = sa.inspect(op.get_bind())
    for table in (*_KEYED_BY_THREAD, *_UNLINKED):
        op.add_column(table, _tenant())
    for table in _CHILDREN:
        for key in inspector.get_foreign_keys(table):
            if key["referred_table"] == "threads":
                op.drop_constraint(str(key["name"]), table, type_="foreignkey")
    for table, (primary, unique) in _KEYED_BY_THREAD.items():
        if primary is not None:
            op.drop_constraint(str(inspector.get_pk_constraint(table)["name"]), table, type_="primary")
            op.create_primary_key(f"pk_{table}", table, list(primary))
        if unique is not None:
            op.drop_constraint("uq_entries_thread_entry", table, type_="unique")
            op.create_unique_constraint("uq_entries_thread_entry", table, list(unique))
    for table in _CHILDREN:
        op.create_foreign_key(
            f"fk_{table}_thread",
            table,
            "threads",
            ["thread_id", "tenant"],
            ["thread_id", "tenant"],
            ondelete="CASCADE",
        )


def _upgrade_by_copy() -> None:
    bind = op.get_bind()
    old = sa.MetaData()
    old.reflect(bind, only=[*_KEYED_BY_THREAD, *_COUNTS])
    new = sa.MetaData()
    renamed = {name: f"{name}_0018" for name in (*_KEYED_BY_THREAD, *_COUNTS)}
    for name in (*_KEYED_BY_THREAD, *_COUNTS):
        _copy_shape(old.tables[name], new, name, renamed)
    new.create_all(bind)
    for name in (*_KEYED_BY_THREAD, *_COUNTS):
        columns = ", ".join(c.name for c in old.tables[name].columns)
        op.execute(f"INSERT INTO {renamed[name]} ({columns}) SELECT {columns} FROM {name}")
    for name in (*_COUNTS, *reversed(_KEYED_BY_THREAD)):
        op.drop_table(name)
    for name in (*_KEYED_BY_THREAD, *_COUNTS):
        # SQLite renames the references to the table in its children's foreign keys too.
        op.rename_table(renamed[name], name)
    for table, indexes in _INDEXES.items():
        for index, indexed in indexes.items():
            op.create_index(index, table, list(indexed))


def _copy_shape(table: sa.Table, into: sa.MetaData, name: str, renamed: dict[str, str]) -> None:
    """`table` under its new name, with the tenant in its keys when it is keyed by thread."""
    keyed = name in _KEYED_BY_THREAD
    primary, unique = _KEYED_BY_THREAD.get(name, (None, None))
    columns = [
        sa.Column(c.name, c.type, nullable=c.nullable, server_default=c.server_default) for c in table.columns
    ]
    if keyed:
        columns.append(_tenant())
    key = primary or tuple(c.name for c in table.primary_key.columns)
    constraints: list[sa.Constraint] = [sa.PrimaryKeyConstraint(*key, name=f"pk_{name}")]
    if unique is not None:
        constraints.append(sa.UniqueConstraint(*unique, name="uq_entries_thread_entry"))
    if name in _CHILDREN:
        constraints.append(
            sa.ForeignKeyConstraint(
                ["thread_id", "tenant"],
                [f"{renamed['threads']}.thread_id", f"{renamed['threads']}.tenant"],
                ondelete="CASCADE",
                name=f"fk_{name}_thread",
            )
        )
    for reference in table.foreign_keys:
        if reference.column.table.name in _COUNTS_PARENTS:
            constraints.append(
                sa.ForeignKeyConstraint(
                    [reference.parent.name],
                    [f"{renamed[reference.column.table.name]}.{reference.column.name}"],
                    ondelete="CASCADE",
                )
            )
    sa.Table(renamed[name], into, *columns, *constraints)


def downgrade() -> None:
    raise NotImplementedError("0018 is not reversed: thread ids of two tenants may collide")
