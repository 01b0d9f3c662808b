"""Caps of the history contract: threads, entries, appends and token counts.

Ids match the store's String(200) columns, so an id that fits the cap always fits
the database, on SQLite as on PostgreSQL.
"""

from __future__ import annotations

# Thread, turn, entry and tool call ids; tool_call_id; artifact ids.
MAX_ID_CHARS = 200
# Model names, tool and participant names, kinds, roles, mime types.
MAX_NAME_CHARS = 200
# An entry's content or reasoning, a chat message's text, one text part.
MAX_CONTENT_CHARS = 1_000_000
# Tool call arguments: their length, and how deep arrays and objects nest.
MAX_ARGUMENTS_CHARS = 1_000_000
MAX_ARGUMENTS_DEPTH = 64
# Entries in one AppendEntries (or new_entries in one PrepareTurn). An append is one
# transaction, and on SQLite other threads read only between transactions: 100 entries
# hold them up for tens of milliseconds, 10,000 did for 12.6 s.
MAX_ENTRIES_PER_APPEND = 100
# Tool calls and artifact references on one entry or message.
MAX_TOOL_CALLS = 128
MAX_ARTIFACT_REFS = 64
# A displayed file name of an artifact.
MAX_DISPLAY_NAME_CHARS = 1_000
# An artifact's width or height in pixels, and a document's pages (far above any
# provider's own limit: 8,000 px for Anthropic, 100 pages per request).
MAX_ARTIFACT_PIXELS = 100_000
MAX_ARTIFACT_PAGES = 100_000
# CountTokens: texts and messages in one request.
MAX_COUNT_TEXTS = 1_000
MAX_COUNT_MESSAGES = 1_000
# A List RPC's page_token (the server's own tokens are far shorter).
MAX_PAGE_TOKEN_CHARS = 1_000
# UpdateThread's update_mask.paths.
MAX_MASK_PATHS = 16
# ImportThread: bytes per message, and of the whole stream (held in memory until it is checked).
MAX_IMPORT_CHUNK_BYTES = 2 * 1024 * 1024
MAX_IMPORT_BYTES = 256 * 1024 * 1024
# Content parts (text, image, file) on one entry, and the inline bytes of one part and of
# one entry: Anthropic takes images up to 5 MB each, and an entry is sent on every later
# round of its thread until a summary covers it.
MAX_ENTRY_PARTS = 16
MAX_INLINE_PART_BYTES = 5_000_000
MAX_INLINE_ENTRY_BYTES = 10_000_000
# ListThreads: a filter's characters.
MAX_FILTER_CHARS = 1000
# ListRoundUsage: rounds per answer.
MAX_ROUND_USAGE_PAGE = 500
DEFAULT_ROUND_USAGE_PAGE = 50
# ListThreadTimeline: rounds per page (a 1,000-round thread in one answer).
MAX_TIMELINE_PAGE = 1000
