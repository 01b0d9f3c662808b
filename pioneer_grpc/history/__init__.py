"""Conversation history: token counting, the budget decision, tool-pair grouping,
truncation, summarizers and the messages a load returns.

Pure core: nothing here imports grpc or the database. The store reads and writes
rows; `server/history_ops.py` joins the two.
"""
