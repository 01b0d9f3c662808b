"""Prompt compiler (pure core: no grpc, no database)."""
