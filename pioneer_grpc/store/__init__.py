"""Durable state behind one port (port.py): its SQLite and PostgreSQL implementations (sql.py,
sqlite.py, postgres.py), an in-memory one (memory.py), the tables and migrations applied at start."""
