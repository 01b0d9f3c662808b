"""Conversation history: token counting, the budget decision, tool-pair grouping,
truncation, summarizers and the messages a load returns.

Pure core: nothing here imports grpc or the database. The store reads and writes
rows; `service/history.py` joins the two.
"""
