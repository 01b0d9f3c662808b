"""Which tokenizer a thread's counts are in: its model's, from the model registry."""

from __future__ import annotations

from dataclasses import dataclass, replace

from pioneer_grpc.history import decide
from pioneer_grpc.history.tokens import TOKENIZER, is_exact
from pioneer_grpc.models.registry import Registry


@dataclass(frozen=True)
class ModelCounting:
    tokenizer: str
    exact: bool
    known: bool


def counting_for(models: Registry, model: str) -> ModelCounting:
    info = models.lookup(model)
    tokenizer = TOKENIZER if info is None else info.tokenizer
    return ModelCounting(tokenizer, is_exact(tokenizer), info is not None)


def counted(models: Registry, snapshot: decide.Snapshot) -> decide.Snapshot:
    """The snapshot naming the tokenizer of its counts (for the report)."""
    counting = counting_for(models, snapshot.model)
    return replace(
        snapshot, tokenizer=counting.tokenizer, tokens_exact=counting.exact, model_known=counting.known
    )
