"""Durable manifest events fanned out to live observers (the store records and reads them).

A use case hands the in-process hub each event it committed; on PostgreSQL every
replica's hub is also poked by LISTEN/NOTIFY carrying only the event id, and reads
the rows itself (through the store's port).
"""
