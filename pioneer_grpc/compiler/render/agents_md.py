"""The AGENTS.md section: caller-supplied content, or the nearest AGENTS.md up the thread folder.

Resolution walks from the thread folder up to the workspace root and takes the
first AGENTS.md with content; an empty file is a draft and does not stop the
walk; files are never merged. The section names its source, scope and
precedence, wraps the file in <AGENTS_MD> tags, and stays within the AGENTS.md
budget; the file is read no further than that budget.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from pioneer_grpc.compiler import diagnostics as codes
from pioneer_grpc.compiler.diagnostics import CompileLog
from pioneer_grpc.compiler.paths import Homes, ReadStatus, read_bounded
from pioneer_grpc.compiler.sections import AGENTS_MD
from pioneer_grpc.compiler.text import one_line, sanitize
from pioneer_grpc.v1 import prompt_pb2

FILE_NAME = "AGENTS.md"
HOOK_ID = "pioneer.thread_agents_doc_prompt"
HOOK_PRIORITY = 600
TREE_LABEL = "thread tree"
CALLER_LABEL = "caller"
SCOPE_LINE = (
    "Scope: these instructions apply to this folder and everything below it; "
    "an AGENTS.md in a closer folder replaces this one."
)
PRECEDENCE_LINE = "Precedence: system, developer and explicit user messages override these instructions."
OPEN_TAG = "<AGENTS_MD>"
CLOSE_TAG = "</AGENTS_MD>"


@dataclass(frozen=True)
class AgentsDoc:
    content: str
    # e.g. "thread tree / A / B", or the caller's label.
    label: str
    # The file it came from; None for caller-supplied content.
    path: str | None
    truncated: bool


def _frame(label: str, content: str) -> str:
    return f"Source: {label}\n{SCOPE_LINE}\n{PRECEDENCE_LINE}\n\n{OPEN_TAG}\n{content}\n{CLOSE_TAG}"


def content_budget(label: str, max_chars: int) -> int:
    return max_chars - len(_frame(label, ""))


def tree_label(folder: Path, workspace: Path) -> str:
    return " / ".join([TREE_LABEL, *folder.relative_to(workspace).parts])


def find_agents_md(
    folder: Path, workspace: Path, homes: Homes, max_chars: int, log: CompileLog
) -> AgentsDoc | None:
    """The nearest AGENTS.md with content from `folder` up to `workspace` (both resolved)."""
    current = folder
    while True:
        label = tree_label(current, workspace)
        path = current / FILE_NAME
        shown = str(path)
        read = read_bounded(path, max(content_budget(label, max_chars), 0), homes)
        if read.status is ReadStatus.LOADED and read.text:
            if read.truncated:
                log.add(
                    codes.FILE_TRUNCATED,
                    f"`{FILE_NAME}` truncated to the section budget: {read.original_chars_label()} -> "
                    f"{len(read.text)} chars",
                    file=shown,
                    section_id=AGENTS_MD,
                )
            if read.controls_replaced:
                log.file_control_characters(FILE_NAME, shown, read.controls_replaced, section_id=AGENTS_MD)
            log.source_manifest.append(
                prompt_pb2.SourceManifestEntry(
                    file=FILE_NAME,
                    path=shown,
                    status=prompt_pb2.SOURCE_STATUS_TRUNCATED
                    if read.truncated
                    else prompt_pb2.SOURCE_STATUS_LOADED,
                    chars=len(read.text),
                )
            )
            return AgentsDoc(read.text, label, shown, read.truncated)
        if read.status is ReadStatus.OUTSIDE_ROOT:
            log.file_outside_root(FILE_NAME, shown, read.detail)
        elif read.status is ReadStatus.READ_ERROR:
            log.add(codes.FILE_READ_ERROR, f"`{FILE_NAME}` could not be read: {read.detail}", file=shown)
        if read.status in (ReadStatus.OUTSIDE_ROOT, ReadStatus.READ_ERROR):
            log.source_manifest.append(
                prompt_pb2.SourceManifestEntry(
                    file=FILE_NAME, path=shown, status=prompt_pb2.SOURCE_STATUS_READ_ERROR
                )
            )
        if current == workspace:
            break
        current = current.parent
    log.source_manifest.append(
        prompt_pb2.SourceManifestEntry(
            file=FILE_NAME, path=str(folder / FILE_NAME), status=prompt_pb2.SOURCE_STATUS_MISSING
        )
    )
    return None


def caller_agents_md(
    supplied: prompt_pb2.AgentsMdContent, max_chars: int, log: CompileLog
) -> AgentsDoc | None:
    label = one_line(supplied.source_label) or CALLER_LABEL
    content = sanitize(supplied.content)
    if not content:
        return None
    budget = max(content_budget(label, max_chars), 0)
    if len(content) > budget:
        log.dynamic_section_truncated(AGENTS_MD, len(content), budget, hook_source=f"{FILE_NAME} at {label}")
        return AgentsDoc(content[:budget].rstrip(), label, None, True)
    return AgentsDoc(content, label, None, False)


def render_agents_md(doc: AgentsDoc, max_chars: int, log: CompileLog) -> str:
    """The section text; records the hook source that produced it in the manifest."""
    if content_budget(doc.label, max_chars) <= 0 or not doc.content:
        log.dynamic_section_omitted(
            AGENTS_MD, codes.OMITTED_ZERO_LIMIT, hook_source=f"{FILE_NAME} at {doc.label}"
        )
        return ""
    text = _frame(doc.label, doc.content)
    log.hook_sources.append(
        prompt_pb2.HookSource(
            source=prompt_pb2.HookRef(
                hook_id=HOOK_ID,
                subscription_id=HOOK_ID,
                phase=prompt_pb2.HOOK_PHASE_TURN_PRE_PROMPT_COMPILE,
                contribution_hash=hashlib.sha256(doc.content.encode("utf-8")).hexdigest(),
            ),
            section_id=AGENTS_MD,
            contribution_kind=prompt_pb2.CONTRIBUTION_KIND_PROMPT_SECTION,
            priority=HOOK_PRIORITY,
            source_count=1,
            truncation=prompt_pb2.TRUNCATION_PROMPT if doc.truncated else prompt_pb2.TRUNCATION_NONE,
            label=f"{FILE_NAME} at {doc.label}",
        )
    )
    return text
