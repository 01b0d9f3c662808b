"""Every capped field of the contract, by message: the one table the checker walks.

Each string, bytes and repeated field of a message a client can send is here
(tests/limits/test_cap_table.py checks that none is missing), with the cap its proto
comment documents.
"""

from __future__ import annotations

from dataclasses import replace

from pioneer_grpc.caps import chat as c
from pioneer_grpc.caps import history as h
from pioneer_grpc.caps import prompt as p
from pioneer_grpc.caps.walk import Cap, CapTable

ID = Cap(size=h.MAX_ID_CHARS)
NAME = Cap(size=h.MAX_NAME_CHARS)
CONTENT = Cap(size=h.MAX_CONTENT_CHARS)
PROMPT_ID = Cap(size=p.MAX_PROMPT_ID_CHARS)
LABEL = Cap(size=p.MAX_LABEL_CHARS)
PROMPT_TEXT = Cap(size=p.MAX_PROMPT_TEXT_CHARS)
PERSONA = Cap(size=p.MAX_PERSONA_CHARS)
PATH = Cap(size=p.MAX_PATH_CHARS, path_parts=p.MAX_PATH_PARTS)
OUTPUT_PATH = Cap(size=p.MAX_OUTPUT_PATH_CHARS)
SYSTEM_TEXT = Cap(size=p.MAX_SYSTEM_TEXT_CHARS)
PAGE_TOKEN = Cap(size=h.MAX_PAGE_TOKEN_CHARS)
FILTER = Cap(size=h.MAX_FILTER_CHARS)
# sha256 hex and the like.
DIGEST = Cap(size=h.MAX_NAME_CHARS)


UNCAPPED = Cap()


def _items(count: int, each: Cap = UNCAPPED) -> Cap:
    return replace(each, items=count)


_REQUESTS: CapTable = {
    "pioneer.v1.CreateThreadRequest": {"thread_id": ID},
    "pioneer.v1.GetThreadRequest": {"thread_id": ID},
    "pioneer.v1.UpdateThreadRequest": {"thread_id": ID},
    "google.protobuf.FieldMask": {"paths": _items(h.MAX_MASK_PATHS, NAME)},
    "pioneer.v1.AppendEntriesRequest": {"thread_id": ID, "entries": _items(h.MAX_ENTRIES_PER_APPEND)},
    "pioneer.v1.CompleteTurnRequest": {
        "thread_id": ID,
        "turn_id": ID,
        "entries": _items(h.MAX_ENTRIES_PER_APPEND),
    },
    "pioneer.v1.AbandonTurnRequest": {"thread_id": ID, "turn_id": ID},
    "pioneer.v1.DeleteThreadRequest": {"thread_id": ID, "etag": ID},
    "pioneer.v1.ForkThreadRequest": {"source_thread_id": ID, "source_turn_id": ID, "thread_id": ID},
    "pioneer.v1.ExportThreadRequest": {"thread_id": ID},
    "pioneer.v1.ImportThreadRequest": {"thread_id": ID, "chunk": Cap(size=h.MAX_IMPORT_CHUNK_BYTES)},
    "pioneer.v1.LoadConversationHistoryRequest": {"thread_id": ID, "exclude_turn_id": ID},
    "pioneer.v1.GetThreadSummaryRequest": {"thread_id": ID},
    "pioneer.v1.ListThreadsRequest": {"page_token": PAGE_TOKEN, "order_by": NAME, "filter": FILTER},
    "pioneer.v1.ListTurnsRequest": {"thread_id": ID, "page_token": PAGE_TOKEN},
    "pioneer.v1.ListEntriesRequest": {"thread_id": ID, "turn_id": ID, "page_token": PAGE_TOKEN},
    "pioneer.v1.CountTokensRequest": {
        "texts": _items(h.MAX_COUNT_TEXTS, CONTENT),
        "messages": _items(h.MAX_COUNT_MESSAGES),
        "model": NAME,
    },
    "pioneer.v1.GetTurnManifestRequest": {"thread_id": ID, "turn_id": ID},
    "pioneer.v1.ListRenderedRoundsRequest": {"thread_id": ID, "turn_id": ID},
    "pioneer.v1.WatchManifestsRequest": {"thread_id": ID},
    "pioneer.v1.TurnRef": {"thread_id": ID, "turn_id": ID},
    "pioneer.v1.CompilePromptRequest": {"thread_id": ID, "turn_id": ID},
    "pioneer.v1.EnsureBootstrapFilesRequest": {"workspace_root": PATH},
    "pioneer.v1.PrepareTurnRequest": {
        "thread_id": ID,
        "turn_id": ID,
        "new_entries": _items(h.MAX_ENTRIES_PER_APPEND),
        "tools": _items(c.MAX_TOOLS),
        "model": NAME,
    },
    "pioneer.v1.RenderOptions": {"cache_key_prefix": NAME, "prompt_cache_thread_id": ID},
    "pioneer.v1.ListRoundUsageRequest": {"thread_id": ID, "page_size": Cap(max_value=h.MAX_ROUND_USAGE_PAGE)},
    "pioneer.v1.ListThreadTimelineRequest": {
        "thread_id": ID,
        "page_size": Cap(max_value=h.MAX_TIMELINE_PAGE),
        "page_token": PAGE_TOKEN,
    },
}

_HISTORY: CapTable = {
    "pioneer.v1.ThreadConfig": {"model": NAME, "summary_model": NAME},
    "pioneer.v1.ConversationEntry": {
        "entry_id": ID,
        "turn_id": ID,
        "content": CONTENT,
        "tool_calls": _items(h.MAX_TOOL_CALLS),
        "tool_call_id": ID,
        "name": NAME,
        "artifact_refs": _items(h.MAX_ARTIFACT_REFS),
        "reasoning_content": CONTENT,
        "content_parts": _items(h.MAX_ENTRY_PARTS),
        "tokenizer": NAME,
    },
    "pioneer.v1.ToolCall": {
        "id": ID,
        "name": NAME,
        "arguments": Cap(size=h.MAX_ARGUMENTS_CHARS, json_depth=h.MAX_ARGUMENTS_DEPTH),
    },
    "pioneer.v1.ArtifactRef": {
        "artifact_id": ID,
        "version_id": ID,
        "display_name": Cap(size=h.MAX_DISPLAY_NAME_CHARS),
        "kind": NAME,
        "mime_type": NAME,
        "sha256": DIGEST,
        "role": NAME,
        "width_px": Cap(max_value=h.MAX_ARTIFACT_PIXELS),
        "height_px": Cap(max_value=h.MAX_ARTIFACT_PIXELS),
        "page_count": Cap(max_value=h.MAX_ARTIFACT_PAGES),
    },
}

_CHAT: CapTable = {
    "pioneer.v1.ChatRequest": {
        "model": NAME,
        "messages": _items(c.MAX_MESSAGES),
        "tools": _items(c.MAX_TOOLS),
    },
    "pioneer.v1.ChatMessage": {
        "content": CONTENT,
        "reasoning_content": CONTENT,
        "content_parts": _items(c.MAX_CONTENT_PARTS),
        "tool_call_id": ID,
        "name": NAME,
        "tool_calls": _items(h.MAX_TOOL_CALLS),
        "artifact_refs": _items(h.MAX_ARTIFACT_REFS),
    },
    "pioneer.v1.ContentPart": {"text": CONTENT},
    "pioneer.v1.MediaPart": {
        "mime_type": NAME,
        "data": Cap(size=c.MAX_MEDIA_BYTES),
        "uri": Cap(size=c.MAX_MEDIA_URI_CHARS),
        "filename": Cap(size=h.MAX_DISPLAY_NAME_CHARS),
    },
    "pioneer.v1.ToolDefinition": {
        "name": NAME,
        "description": Cap(size=c.MAX_TOOL_DESCRIPTION_CHARS),
        "parameters": Cap(size=c.MAX_TOOL_PARAMETERS_BYTES),
    },
    "pioneer.v1.ToolChoice": {"tool_name": NAME},
}

# Names inside a compile input (tool names, categories) are guidance text for the model, not
# identifiers a provider checks: they take the label cap.
_COMPILE_INPUT: CapTable = {
    "pioneer.v1.PromptCompileInput": {
        "workspace_root": PATH,
        "skills_prompt": PROMPT_TEXT,
        "retry_instruction": PROMPT_TEXT,
        "dynamic_context": PROMPT_TEXT,
        "extra_system": PROMPT_TEXT,
        "thread_context": _items(p.MAX_THREAD_CONTEXT_SNIPPETS),
        "hidden_tool_domains": _items(p.MAX_HIDDEN_TOOL_DOMAINS),
        "dynamic_sections": _items(p.MAX_DYNAMIC_SECTIONS),
        "hook_sources": _items(p.MAX_HOOK_SOURCES),
        "persona": PERSONA,
    },
    "pioneer.v1.SkillsInput": {"active_skills": _items(p.MAX_ACTIVE_SKILLS)},
    "pioneer.v1.Skill": {"slug": PROMPT_ID, "display_name": LABEL, "description": LABEL, "body": PROMPT_TEXT},
    "pioneer.v1.MemoryRecall": {
        "items": _items(p.MAX_MEMORY_ITEMS),
        "available_tools": _items(p.MAX_MEMORY_TOOLS, LABEL),
        "thread_context": PROMPT_TEXT,
        "task_context": PROMPT_TEXT,
    },
    "pioneer.v1.MemoryItem": {"scope": LABEL, "category": LABEL, "content": PROMPT_TEXT},
    "pioneer.v1.AgentsMdSource": {"thread_folder": PATH},
    "pioneer.v1.AgentsMdContent": {"content": PROMPT_TEXT, "source_label": LABEL},
    "pioneer.v1.ThreadContextSnippet": {
        "snippet_id": PROMPT_ID,
        "text": PROMPT_TEXT,
        "artifacts": _items(h.MAX_ARTIFACT_REFS),
    },
    "pioneer.v1.SnippetProvenance": {
        "workspace": LABEL,
        "thread_id": ID,
        "turn_id": ID,
        "task_id": ID,
        "timestamp": NAME,
        "boundary": NAME,
    },
    "pioneer.v1.HiddenToolDomain": {"domain": LABEL, "tools": _items(p.MAX_DOMAIN_TOOLS, LABEL)},
    "pioneer.v1.PermissionProfile": {
        "rules": _items(p.MAX_PERMISSION_RULES),
        "allowed_tools": _items(p.MAX_PERMISSION_TOOLS, LABEL),
        "denied_tools": _items(p.MAX_PERMISSION_TOOLS, LABEL),
        "allowed_paths": _items(p.MAX_PERMISSION_PATHS, OUTPUT_PATH),
    },
    "pioneer.v1.PermissionRule": {"category": LABEL},
    "pioneer.v1.DynamicSection": {"id": PROMPT_ID, "title": LABEL, "content": PROMPT_TEXT},
    "pioneer.v1.HookSource": {"section_id": PROMPT_ID, "label": LABEL},
    "pioneer.v1.HookRef": {
        "hook_id": PROMPT_ID,
        "subscription_id": PROMPT_ID,
        "contribution_id": PROMPT_ID,
        "contribution_hash": DIGEST,
    },
}

_COMPILED: CapTable = {
    "pioneer.v1.CompiledPromptPayload": {
        "stable_system_text": SYSTEM_TEXT,
        "dynamic_system_text": SYSTEM_TEXT,
        "full_system_text": SYSTEM_TEXT,
        "boundary_marker": NAME,
        "sections": _items(p.MAX_MANIFEST_SECTIONS),
    },
    "pioneer.v1.PromptSection": {
        "id": PROMPT_ID,
        "title": LABEL,
        "content": SYSTEM_TEXT,
        "sources": _items(p.MAX_SECTION_SOURCES, OUTPUT_PATH),
        "fingerprint": DIGEST,
    },
    "pioneer.v1.PromptManifest": {
        "compiler_version": NAME,
        "section_ids": _items(p.MAX_MANIFEST_SECTIONS, PROMPT_ID),
        "fingerprint_stable": DIGEST,
        "fingerprint_dynamic": DIGEST,
        "fingerprint_full": DIGEST,
        "section_fingerprints": _items(p.MAX_MANIFEST_SECTIONS),
        "diagnostics": _items(p.MAX_MANIFEST_DIAGNOSTICS),
        "hook_sources": _items(p.MAX_MANIFEST_HOOK_SOURCES),
        "source_manifest": _items(p.MAX_MANIFEST_FILES),
        "thread_id": ID,
        "turn_id": ID,
    },
    "pioneer.v1.SectionFingerprint": {"section_id": PROMPT_ID, "fingerprint": DIGEST},
    "pioneer.v1.PromptDiagnostic": {
        "code": NAME,
        "message": Cap(size=p.MAX_DIAGNOSTIC_MESSAGE_CHARS),
        "file": OUTPUT_PATH,
        "section_id": PROMPT_ID,
        "hook_source": LABEL,
    },
    "pioneer.v1.SourceManifestEntry": {"file": NAME, "path": OUTPUT_PATH},
}

CAPS: CapTable = {**_REQUESTS, **_HISTORY, **_CHAT, **_COMPILE_INPUT, **_COMPILED}
