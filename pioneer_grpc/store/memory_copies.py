"""The port's Copies in memory (store/copy_port.py), answering as store/copies.py does on SQL."""

from __future__ import annotations

from datetime import UTC
from types import SimpleNamespace
from typing import TYPE_CHECKING

from pioneer_grpc.store.clock import now
from pioneer_grpc.store.copies import (
    COMPLETED,
    config_message,
    failed_entry_id,
    settings_from,
    thread_exists,
    turn_not_completed,
)
from pioneer_grpc.store.copy_port import CopiedEntry, CopiedSummary, CopiedTurn, Fork, ThreadCopy, Written
from pioneer_grpc.store.entries import entry_message, entry_values
from pioneer_grpc.store.port import Conflict, NewEntry
from pioneer_grpc.store.summaries import summary_message
from pioneer_grpc.store.threads import ThreadSettings, turn_not_found

if TYPE_CHECKING:
    from pioneer_grpc.store.memory import MemoryStore


class MemoryCopies:
    def __init__(self, store: MemoryStore) -> None:
        self.s = store

    async def read(self, thread_id: str, through_turn_id: str = "") -> ThreadCopy:
        async with self.s._lock:
            return self._read(thread_id, through_turn_id)

    async def write(self, thread_id: str, copy: ThreadCopy) -> Written:
        async with self.s._lock:
            return self._write(thread_id, copy, fresh=False)

    async def fork(self, fork: Fork) -> Written | Conflict:
        async with self.s._lock:
            copy = self._read(fork.source_thread_id, fork.turn_id)
            if settings_from(copy.config) != settings_from(fork.expected):
                return Conflict()
            forked = ThreadCopy(
                fork.config,
                copy.created_at,
                copy.updated_at,
                copy.compaction_failed_entry_id,
                copy.turns,
                copy.entries,
                copy.summaries,
            )
            return self._write(fork.thread_id, forked, fresh=True)

    def _read(self, thread_id: str, through_turn_id: str) -> ThreadCopy:
        t = self.s._t
        thread = self.s.thread(thread_id)
        rows = self.s.rows_of(thread_id)
        summaries = sorted((s for s in t.summaries.values() if s.thread_id == thread_id), key=lambda s: s.id)
        turns = sorted(
            ((turn_id, turn) for (tid, turn_id), turn in t.turns.items() if tid == thread_id),
            key=lambda pair: (pair[1].created_at, pair[0]),
        )
        if through_turn_id:
            through = self._through(thread_id, through_turn_id)
            later = [row.created_at for row in rows if row.id > through]
            rows = [row for row in rows if row.completed and row.id <= through]
            summaries = [
                s
                for s in summaries
                if s.covers_through_sequence <= through and (not later or s.created_at <= min(later))
            ]
            kept = {row.turn_id for row in rows} | {through_turn_id}
            turns = [(tid, turn) for tid, turn in turns if tid in kept and turn.status == COMPLETED]
        entries = [
            CopiedEntry(
                entry_message(row),
                row.content_hash,
                {tok: n for (seq, tok), n in t.entry_counts.items() if seq == row.id},
            )
            for row in rows
        ]
        return ThreadCopy(
            config=config_message(_settings(thread)),
            created_at=thread.created_at,
            updated_at=thread.updated_at,
            compaction_failed_entry_id=failed_entry_id(thread.compaction_failed_sequence, entries),
            turns=[CopiedTurn(tid, turn.status, turn.created_at, turn.updated_at) for tid, turn in turns],
            entries=entries,
            summaries=[
                CopiedSummary(
                    summary_message(s),
                    s.tokenizer,
                    {tok: n for (sid, tok), n in t.summary_counts.items() if sid == s.id},
                )
                for s in summaries
            ],
        )

    def _through(self, thread_id: str, turn_id: str) -> int:
        turn = self.s._t.turns.get((thread_id, turn_id))
        if turn is None:
            raise turn_not_found(thread_id, turn_id)
        if turn.status != COMPLETED:
            raise turn_not_completed(thread_id, turn_id)
        rows = self.s.rows_of(thread_id)
        own: list[int] = [row.id for row in rows if row.turn_id == turn_id]
        if own:
            return max(own)
        earlier: list[int] = [row.id for row in rows if row.created_at <= turn.created_at]
        return max(earlier, default=0)

    def _write(self, thread_id: str, copy: ThreadCopy, fresh: bool) -> Written:
        from pioneer_grpc.store.memory import _Thread, _Turn

        t = self.s._t
        if thread_id in t.threads:
            raise thread_exists(thread_id)
        moment = now()
        thread = _Thread(
            thread_id,
            **settings_from(copy.config).__dict__,
            created_at=moment if fresh else copy.created_at,
            updated_at=moment if fresh else copy.updated_at,
        )
        t.seq.version += 1_000_000
        thread.version = t.seq.version
        entries = copy.entries
        thread.open_entries = sum(1 for e in entries if not e.entry.completed)
        thread.open_turns = len({e.entry.turn_id for e in entries if not e.entry.completed})
        thread.completed_entries = sum(1 for e in entries if e.entry.completed)
        t.threads[thread_id] = thread
        for turn in copy.turns:
            t.turns[(thread_id, turn.turn_id)] = _Turn(turn.status, turn.created_at, turn.updated_at)
        sequences: dict[str, int] = {}
        for copied in entries:
            entry = copied.entry
            sequence = t.seq.entry
            t.seq.entry += 1
            values = entry_values(
                thread_id,
                NewEntry(entry, copied.content_hash, entry.token_count),
                entry.tokenizer,
                entry.create_time.ToDatetime(tzinfo=UTC),
            )
            values["completed"] = entry.completed
            t.entries[sequence] = SimpleNamespace(**values, id=sequence)
            t.by_entry_id[(thread_id, entry.entry_id)] = sequence
            sequences[entry.entry_id] = sequence
            for call in entry.tool_calls:
                made = t.calls.setdefault((thread_id, call.id), [])
                if entry.entry_id not in made:
                    made.append(entry.entry_id)
            for tokenizer, count in copied.counts.items():
                t.entry_counts[(sequence, tokenizer)] = count
        for copied_summary in copy.summaries:
            s = copied_summary.summary
            summary_id = t.seq.summary
            t.seq.summary += 1
            t.summaries[summary_id] = SimpleNamespace(
                id=summary_id,
                thread_id=thread_id,
                created_at=s.create_time.ToDatetime(tzinfo=UTC),
                text=s.text,
                token_count=s.token_count,
                tokenizer=copied_summary.tokenizer,
                covers_through_entry_id=s.covers_through_entry_id,
                covers_through_sequence=sequences[s.covers_through_entry_id],
                model=s.model,
                summarizer=s.summarizer,
            )
            for tokenizer, count in copied_summary.counts.items():
                t.summary_counts[(summary_id, tokenizer)] = count
        if copy.compaction_failed_entry_id:
            thread.compaction_failed_sequence = sequences[copy.compaction_failed_entry_id]
        return Written(self.s.thread_message(thread), len(copy.turns), len(copy.summaries))


def _settings(thread: object) -> ThreadSettings:
    return ThreadSettings(**{name: getattr(thread, name) for name in ThreadSettings.__dataclass_fields__})
