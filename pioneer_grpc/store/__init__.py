"""Durable state: SQLAlchemy models, the engine, and migrations applied at start."""
