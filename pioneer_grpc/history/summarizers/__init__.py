"""Summarizers: the interface, and `extractive` (embedded, deterministic, no model).

A summarizer that calls a model over the network is an adapter
(`pioneer_grpc.adapters`), chosen by the service from the configuration.
"""

from __future__ import annotations

from pioneer_grpc.history.summarizers.base import Summarizer, SummarizerError, SummaryRequest
from pioneer_grpc.history.summarizers.extractive import ExtractiveSummarizer

__all__ = [
    "ExtractiveSummarizer",
    "Summarizer",
    "SummarizerError",
    "SummaryRequest",
]
