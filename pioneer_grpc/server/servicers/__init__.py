"""Thin servicers: convert the request, call the use case in `service/`, convert the answer."""
