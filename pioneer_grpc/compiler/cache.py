"""CompileCache: reuse a compile while its input and everything it read are unchanged.

An entry is the payload compiled from one (runtime homes, input) pair, kept with
the FsView of that compile. A call with the same homes and the same input bytes
(deterministic serialization; thread and turn ids are not part of the input)
gets a copy of the entry's payload only when the filesystem still answers every
question that compile asked the same way (`FsView.unchanged`: one lstat per path
it looked up or read). Otherwise it compiles afresh, and that is the entry from
then on. Not kept: compiles that raise, that met a failed open or read, or that
read a file changed less than `settle_ns` before they began (`FsView.settled`).

A cache compiles with one CompileSettings (the server's persona and home
labels), given when it is made; they are not part of the key.

Bounded by entry count and by bytes (payload plus key); the least recently used
entry goes first. Thread-safe: the server compiles in worker threads. A cached
payload is never handed out, only copied.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pioneer_grpc.compiler.compile import compile_seen
from pioneer_grpc.compiler.fsview import FsView
from pioneer_grpc.compiler.settings import DEFAULT_SETTINGS, CompileSettings
from pioneer_grpc.v1 import prompt_pb2

MAX_ENTRIES = 256
MAX_BYTES = 64 * 1024 * 1024
# Longer than a kernel tick and than the one- or two-second timestamps of coarse filesystems.
SETTLE_NS = 2_000_000_000

_Key = tuple[tuple[str, ...], bytes]


@dataclass(frozen=True)
class _Entry:
    payload: prompt_pb2.CompiledPromptPayload
    view: FsView
    size: int


class CompileCache:
    def __init__(
        self,
        max_entries: int = MAX_ENTRIES,
        max_bytes: int = MAX_BYTES,
        settle_ns: int = SETTLE_NS,
        settings: CompileSettings = DEFAULT_SETTINGS,
    ) -> None:
        self.settings = settings
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self.settle_ns = settle_ns
        self.hits = 0
        self.misses = 0
        self._entries: OrderedDict[_Key, _Entry] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def size_bytes(self) -> int:
        return self._bytes

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._bytes = 0

    def compile(
        self,
        request: prompt_pb2.PromptCompileInput,
        allowed_roots: Sequence[Path],
        *,
        thread_id: str = "",
        turn_id: str = "",
    ) -> prompt_pb2.CompiledPromptPayload:
        """compile_prompt(request, allowed_roots, settings=self.settings, thread_id=..., turn_id=...)."""
        payload = prompt_pb2.CompiledPromptPayload()
        self.compile_into(payload, request, allowed_roots, thread_id=thread_id, turn_id=turn_id)
        return payload

    def compile_into(
        self,
        target: prompt_pb2.CompiledPromptPayload,
        request: prompt_pb2.PromptCompileInput,
        allowed_roots: Sequence[Path],
        *,
        thread_id: str = "",
        turn_id: str = "",
    ) -> bool:
        """`compile` written into `target` (say, a response's payload field), saving a copy.

        True when the answer came from the cache.
        """
        if self.cached_into(target, request, allowed_roots, thread_id=thread_id, turn_id=turn_id):
            return True
        key = self._key(request, allowed_roots)
        stale = self._entry(key)
        self._count(hit=False)
        if stale is not None and not stale.view.unchanged():
            self._drop(key, stale)
        view = FsView()
        payload = compile_seen(request, allowed_roots, view, settings=self.settings)
        if view.settled(self.settle_ns):
            size = payload.ByteSize() + len(key[1])
            if size <= self.max_bytes:
                self._store(key, _Entry(payload, view, size))
        target.CopyFrom(payload)
        target.manifest.thread_id = thread_id
        target.manifest.turn_id = turn_id
        return False

    def cached_into(
        self,
        target: prompt_pb2.CompiledPromptPayload,
        request: prompt_pb2.PromptCompileInput,
        allowed_roots: Sequence[Path],
        *,
        thread_id: str = "",
        turn_id: str = "",
    ) -> bool:
        """`compile_into` when the cache holds this compile unchanged (one lstat per path it read);
        else False, nothing written and nothing counted. Never compiles."""
        key = self._key(request, allowed_roots)
        entry = self._entry(key)
        if entry is None or not entry.view.unchanged():
            return False
        self._count(hit=True)
        target.CopyFrom(entry.payload)
        target.manifest.thread_id = thread_id
        target.manifest.turn_id = turn_id
        return True

    @staticmethod
    def _key(request: prompt_pb2.PromptCompileInput, allowed_roots: Sequence[Path]) -> _Key:
        return (
            tuple(os.fspath(root) for root in allowed_roots),
            request.SerializeToString(deterministic=True),
        )

    def _entry(self, key: _Key) -> _Entry | None:
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None:
                self._entries.move_to_end(key)
        return entry

    def _count(self, hit: bool) -> None:
        with self._lock:
            if hit:
                self.hits += 1
            else:
                self.misses += 1

    def _drop(self, key: _Key, stale: _Entry) -> None:
        with self._lock:
            if self._entries.get(key) is stale:
                del self._entries[key]
                self._bytes -= stale.size

    def _store(self, key: _Key, entry: _Entry) -> None:
        with self._lock:
            replaced = self._entries.pop(key, None)
            if replaced is not None:
                self._bytes -= replaced.size
            self._entries[key] = entry
            self._bytes += entry.size
            while len(self._entries) > self.max_entries or self._bytes > self.max_bytes:
                _, evicted = self._entries.popitem(last=False)
                self._bytes -= evicted.size
