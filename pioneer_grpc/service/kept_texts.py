"""Per thread, the section fingerprints whose texts this server has had the store keep.

Per process and bounded (service/section_texts.py says what a miss costs: the texts written again,
which the store ignores as kept).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable

from pioneer_grpc.compiler.sections import render_section
from pioneer_grpc.service.tenancy import ThreadKey
from pioneer_grpc.v1 import prompt_pb2

MAX_THREADS = 4096
# A thread whose dynamic half changes every round is remembered by its newest fingerprints only.
MAX_PER_THREAD = 256


class KeptTexts:
    """Per thread, the fingerprints whose texts are kept; least recently used thread first out."""

    def __init__(self, threads: int = MAX_THREADS, per_thread: int = MAX_PER_THREAD) -> None:
        self._threads, self._per_thread = threads, per_thread
        self._items: OrderedDict[ThreadKey, OrderedDict[str, None]] = OrderedDict()

    def unknown(self, thread_id: ThreadKey, sections: Iterable[prompt_pb2.PromptSection]) -> dict[str, str]:
        """The texts, by fingerprint, of the sections not known to be kept for the thread."""
        known = self._items.get(thread_id)
        if known is not None:
            self._items.move_to_end(thread_id)
        return {
            section.fingerprint: render_section(section)
            for section in sections
            if section.fingerprint and (known is None or section.fingerprint not in known)
        }

    def mark(self, thread_id: ThreadKey, fingerprints: Iterable[str]) -> None:
        known = self._items.setdefault(thread_id, OrderedDict())
        self._items.move_to_end(thread_id)
        for fingerprint in fingerprints:
            known[fingerprint] = None
            known.move_to_end(fingerprint)
        while len(known) > self._per_thread:
            known.popitem(last=False)
        while len(self._items) > self._threads:
            self._items.popitem(last=False)

    def forget(self, thread_id: ThreadKey) -> None:
        self._items.pop(thread_id, None)
