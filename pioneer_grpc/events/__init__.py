"""Durable manifest events: recorded with the turn, read back by id, fanned out to observers.

On SQLite the recorder pokes the in-process hub after commit; on PostgreSQL every
replica's hub is also poked by LISTEN/NOTIFY carrying only the event id, and reads
the rows itself.
"""
