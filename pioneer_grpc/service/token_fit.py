"""Which tokenizer a thread's counts are in (its model's, from the model registry), and what its
model's provider counts for the images and documents entries attach."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from pioneer_grpc.history import decide
from pioneer_grpc.history import diagnostics as codes
from pioneer_grpc.history.parts import part_refs
from pioneer_grpc.history.render import entry_counted_texts
from pioneer_grpc.history.tokens import TOKENIZER, count_blocking, is_exact
from pioneer_grpc.models.attachments import attachment_tokens
from pioneer_grpc.models.registry import Registry
from pioneer_grpc.service.load_cache import LoadCache
from pioneer_grpc.service.tenancy import ThreadKey
from pioneer_grpc.store.port import NewEntry
from pioneer_grpc.v1 import history_pb2


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


@dataclass(frozen=True)
class Attached:
    # An `attachment_size_assumed` diagnostic per ref counted with a default size.
    notes: tuple[history_pb2.HistoryDiagnostic, ...]
    # entry_id -> the tokens added to its token_count.
    tokens: dict[str, int]


def with_attachments(
    models: Registry, model: str, entries: Iterable[history_pb2.ConversationEntry]
) -> Attached:
    """Adds to each entry's token_count what its images and documents cost for `model`.

    Their text count is stored; this part is computed from the refs whenever entries
    are read (arithmetic, no tokenizing), so it always follows the thread's model.
    """
    rule = models.image_rule(model)
    notes: list[history_pb2.HistoryDiagnostic] = []
    added: dict[str, int] = {}
    for entry in entries:
        if not entry.artifact_refs and not entry.content_parts:
            continue
        counted = attachment_tokens(rule, [*entry.artifact_refs, *part_refs(entry)])
        entry.token_count += counted.tokens
        added[entry.entry_id] = counted.tokens
        notes.extend(
            decide.diagnostic(codes.ATTACHMENT_SIZE_ASSUMED, note, entry.entry_id) for note in counted.assumed
        )
    return Attached(tuple(notes), added)


class SeenModels:
    """Each thread's model as this server's last append or round to it found it (the latest threads
    only): a guess for counting a batch before the store reads the model. Owned by the context, so
    two servers in one process never guess from each other's threads."""

    MAX_THREADS = 4096

    def __init__(self) -> None:
        self._models: OrderedDict[ThreadKey, str] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, thread: ThreadKey) -> str | None:
        with self._lock:
            return self._models.get(thread)

    def forget(self, thread: ThreadKey) -> None:
        with self._lock:
            self._models.pop(thread, None)

    def put(self, thread: ThreadKey, model: str) -> None:
        with self._lock:
            self._models[thread] = model
            self._models.move_to_end(thread)
            if len(self._models) > self.MAX_THREADS:
                self._models.popitem(last=False)


def recounted(entries: Sequence[NewEntry], tokenizer: str) -> list[NewEntry]:
    """`entries` counted again in `tokenizer` (the store found the thread counting in it). Blocking."""
    return [
        replace(new, token_count=sum(count_blocking(entry_counted_texts(new.entry), tokenizer)))
        for new in entries
    ]


def likely_tokenizer(models: Registry, load_cache: LoadCache, seen: SeenModels, thread: ThreadKey) -> str:
    """The tokenizer of the thread's model as its kept history last saw it, else as this server's last
    append or round to it saw it (cl100k_base for a thread neither has seen): what to count new
    entries in before the store reads the model. A wrong guess costs a second count."""
    model = likely_model(load_cache, seen, thread)
    return TOKENIZER if model is None else counting_for(models, model).tokenizer


def likely_model(load_cache: LoadCache, seen: SeenModels, thread: ThreadKey) -> str | None:
    """The thread's model as `likely_tokenizer` guesses it; None for a thread not seen."""
    return load_cache.model_of(thread) or seen.get(thread)
