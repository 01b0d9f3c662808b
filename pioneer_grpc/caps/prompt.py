"""Caps of a compile input and of the manifests and payloads it produces.

A compile renders far less than these allow (16 dynamic sections, 5 memory items,
...); the caps bound what a request may carry, so its cost is bounded before
any work. A manifest or payload produced from an input within these caps is
itself within the manifest caps, so it can always be sent back (DiffManifests,
RenderChatRequest).
"""

from __future__ import annotations

# workspace_root and agents_md.thread_folder: characters and "/"-separated components.
MAX_PATH_CHARS = 1_024
MAX_PATH_PARTS = 32
# A path the server wrote (a manifest's file paths and section sources).
MAX_OUTPUT_PATH_CHARS = 4_096
# Free text of the input: dynamic and extra context, skills, retry, memory contexts, AGENTS.md content.
MAX_PROMPT_TEXT_CHARS = 200_000
# The Identity section's text: a request's persona, and the server's configured one.
MAX_PERSONA_CHARS = 50_000
# Short labels and titles; ids inside a compile input (sections, hooks, snippets, slugs).
MAX_LABEL_CHARS = 1_000
MAX_PROMPT_ID_CHARS = 200
# Repeated parts of a compile input.
MAX_DYNAMIC_SECTIONS = 64
MAX_HOOK_SOURCES = 256
MAX_THREAD_CONTEXT_SNIPPETS = 64
MAX_HIDDEN_TOOL_DOMAINS = 64
MAX_DOMAIN_TOOLS = 256
MAX_ACTIVE_SKILLS = 256
MAX_MEMORY_ITEMS = 64
MAX_MEMORY_TOOLS = 256
MAX_PERMISSION_RULES = 256
MAX_PERMISSION_TOOLS = 512
MAX_PERMISSION_PATHS = 256
# A manifest: sections, diagnostics, hook sources and files read.
MAX_MANIFEST_SECTIONS = 256
MAX_MANIFEST_DIAGNOSTICS = 1_024
MAX_MANIFEST_HOOK_SOURCES = 512
MAX_MANIFEST_FILES = 256
MAX_DIAGNOSTIC_MESSAGE_CHARS = 8_000
# A compiled payload's texts (the system prompt halves and each section).
MAX_SYSTEM_TEXT_CHARS = 2_000_000
MAX_SECTION_SOURCES = 512
