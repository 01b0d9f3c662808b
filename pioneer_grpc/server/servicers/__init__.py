"""Thin servicers: convert requests, delegate to a core, convert the answer."""
