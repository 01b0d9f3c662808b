"""Caps of a provider round: ChatRequest, its messages, parts and tools, and render options."""

from __future__ import annotations

# Messages in one ChatRequest.
MAX_MESSAGES = 2_000
# Content parts of one message.
MAX_CONTENT_PARTS = 256
# Tools offered in one round.
MAX_TOOLS = 256
# A tool's description, and its JSON schema serialized.
MAX_TOOL_DESCRIPTION_CHARS = 10_000
MAX_TOOL_PARAMETERS_BYTES = 100_000
# Inline media, and a media URI (a data: URI carries the bytes as base64).
MAX_MEDIA_BYTES = 10_000_000
MAX_MEDIA_URI_CHARS = 14_000_000
