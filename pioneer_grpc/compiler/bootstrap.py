"""Bootstrap files (SOUL.md, IDENTITY.md, USER.md): read, budget, render as file blocks.

Files are read from the workspace root in that order, each within the per-file
limit, then the total budget is spent in the same order. SOUL.md and IDENTITY.md
render even when empty (the reminder still applies); USER.md renders only with
content. SOUL.md and IDENTITY.md are the assistant's identity: a team with its own
persona does not have them read (compile.reads_identity_files). Nothing here
raises: every problem becomes a diagnostic and a source manifest entry (a missing
USER.md only the entry: it is optional, and missing is its usual state). A heading
names its file by its home's label (settings.py), so it reads the same on every
machine; diagnostics and the source manifest keep the path read on this one.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pioneer_grpc.compiler import sections as ids
from pioneer_grpc.compiler.diagnostics import CompileLog
from pioneer_grpc.compiler.limits import Limits
from pioneer_grpc.compiler.paths import Homes, ReadStatus, is_inside, read_bounded
from pioneer_grpc.compiler.seed import IDENTITY_FILE, SOUL_FILE
from pioneer_grpc.v1 import prompt_pb2

USER_FILE = "USER.md"
EVOLVE_REMINDER = "This file is yours to evolve. As you learn who you are, update it."


@dataclass(frozen=True)
class BootstrapFile:
    name: str
    section_id: str
    # Rendered when empty, followed by the reminder line; the assistant's identity (SOUL.md,
    # IDENTITY.md), read only as compile.reads_identity_files says. USER.md is neither: optional.
    evolvable: bool


BOOTSTRAP_FILES: tuple[BootstrapFile, ...] = (
    BootstrapFile(SOUL_FILE, ids.SOUL_CORE, evolvable=True),
    BootstrapFile(IDENTITY_FILE, ids.IDENTITY_CORE, evolvable=True),
    BootstrapFile(USER_FILE, ids.USER_PERSONA, evolvable=False),
)

_STATUS = {
    ReadStatus.MISSING: prompt_pb2.SOURCE_STATUS_MISSING,
    ReadStatus.READ_ERROR: prompt_pb2.SOURCE_STATUS_READ_ERROR,
    ReadStatus.OUTSIDE_ROOT: prompt_pb2.SOURCE_STATUS_READ_ERROR,
}


def file_block(name: str, path: str, content: str, evolvable: bool) -> str:
    block = f"### {name} ({path})\n{content}"
    if evolvable:
        block = f"{block.rstrip()}\n\n{EVOLVE_REMINDER}"
    return block


def heading_path(path: Path, roots: Sequence[Path], labels: Sequence[str]) -> str:
    """`path` (resolved) as a heading names it: the label of the first home it lies in, then the
    path below that home; the absolute path when that home has no label."""
    for root, label in zip(roots, labels, strict=False):
        if is_inside(path, [root]):
            below = os.path.relpath(path, root)
            if below == ".":
                return label
            if not label:
                return below
            return f"{label}{below}" if label.endswith("/") else f"{label}/{below}"
    return str(path)


def filter_bootstrap_files(workspace: Path, log: CompileLog) -> None:
    """Record that the profile leaves the bootstrap files out."""
    for spec in BOOTSTRAP_FILES:
        log.file_filtered_by_profile(spec.name, str(workspace / spec.name))


def load_bootstrap_sections(
    workspace: Path,
    homes: Homes,
    limits: Limits,
    log: CompileLog,
    home_labels: Sequence[str],
    identity_files: bool = True,
) -> list[prompt_pb2.PromptSection]:
    """The bootstrap sections; `identity_files` False leaves SOUL.md and IDENTITY.md unread."""
    sections: list[prompt_pb2.PromptSection] = []
    remaining = limits.max_chars_total
    for spec in BOOTSTRAP_FILES:
        if spec.evolvable and not identity_files:
            continue
        path = workspace / spec.name
        shown = str(path)
        read = read_bounded(path, limits.max_chars_per_file, homes)
        if read.status is not ReadStatus.LOADED:
            if read.status is ReadStatus.MISSING:
                if spec.evolvable:  # a missing USER.md is its normal state
                    log.missing_file(spec.name, shown)
            elif read.status is ReadStatus.OUTSIDE_ROOT:
                log.file_outside_root(spec.name, shown, read.detail)
            else:
                log.file_read_error(spec.name, shown, read.detail)
            log.source_manifest.append(
                prompt_pb2.SourceManifestEntry(file=spec.name, path=shown, status=_STATUS[read.status])
            )
            continue
        content = read.text
        truncated = read.truncated
        if read.truncated:
            log.file_truncated(spec.name, shown, read.original_chars_label(), len(content))
        budget_before = remaining
        if len(content) > remaining:
            log.total_budget_truncated(spec.name, shown, len(content), remaining)
            content = content[:remaining].rstrip()
            truncated = True
        remaining -= len(content)
        if read.controls_replaced:
            log.file_control_characters(spec.name, shown, read.controls_replaced)
        log.source_manifest.append(
            prompt_pb2.SourceManifestEntry(
                file=spec.name,
                path=shown,
                status=prompt_pb2.SOURCE_STATUS_TRUNCATED if truncated else prompt_pb2.SOURCE_STATUS_LOADED,
                chars=len(content),
            )
        )
        # An exhausted budget drops the file; an empty USER.md has nothing to say.
        if budget_before == 0 or (not content and not spec.evolvable):
            continue
        section = ids.make_section(
            spec.section_id,
            ids.STABLE,
            ids.TITLES[spec.section_id],
            file_block(spec.name, heading_path(path, homes.roots, home_labels), content, spec.evolvable),
            [shown],
        )
        if section is not None:
            sections.append(section)
    return sections
