"""Diagnostic codes and messages: what a compile did instead of failing.

Codes and message shapes follow the original where it has them; the rest
(file_outside_root, skill/thread-context/hidden-domain budget notes) are ours.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pioneer_grpc.v1 import prompt_pb2

MISSING_FILE = "missing_file"
FILE_READ_ERROR = "file_read_error"
FILE_OUTSIDE_ROOT = "file_outside_root"
FILE_TRUNCATED = "file_truncated"
FILE_CONTROL_CHARACTERS = "file_control_characters"
TOTAL_BUDGET_TRUNCATED = "total_budget_truncated"
FILE_FILTERED_BY_PROFILE = "file_filtered_by_profile"
DYNAMIC_SECTION_TRUNCATED = "dynamic_section_truncated"
DYNAMIC_SECTION_OMITTED = "dynamic_section_omitted"
SKILLS_TRUNCATED = "skills_truncated"
MEMORY_ITEMS_OMITTED = "memory_items_omitted"
THREAD_CONTEXT_TRUNCATED = "thread_context_truncated"
HIDDEN_TOOL_DOMAINS_TRUNCATED = "hidden_tool_domains_truncated"
# An input the request set that the profile does not render (minimal and none
# have no dynamic half; only full has the tool recovery policy).
INPUT_DROPPED_BY_PROFILE = "input_dropped_by_profile"
# Forget-only policy: recalled items and thread/task context are not shown.
MEMORY_WITHHELD_BY_POLICY = "memory_withheld_by_policy"

OMITTED_EMPTY = "content was empty"
OMITTED_BUDGET = "dynamic section budget was exhausted"
OMITTED_COUNT = "dynamic section count limit was reached"
OMITTED_ZERO_LIMIT = "section character limit was zero"


@dataclass
class CompileLog:
    """What renderers record besides text, in the order it happened."""

    diagnostics: list[prompt_pb2.PromptDiagnostic] = field(default_factory=list)
    hook_sources: list[prompt_pb2.HookSource] = field(default_factory=list)
    source_manifest: list[prompt_pb2.SourceManifestEntry] = field(default_factory=list)

    def add(
        self,
        code: str,
        message: str,
        *,
        file: str | None = None,
        section_id: str | None = None,
        hook_source: str | None = None,
    ) -> None:
        diagnostic = prompt_pb2.PromptDiagnostic(code=code, message=message)
        if file is not None:
            diagnostic.file = file
        if section_id is not None:
            diagnostic.section_id = section_id
        if hook_source is not None:
            diagnostic.hook_source = hook_source
        self.diagnostics.append(diagnostic)

    def missing_file(self, name: str, path: str) -> None:
        self.add(MISSING_FILE, f"bootstrap file `{name}` is missing", file=path)

    def file_read_error(self, name: str, path: str, reason: str) -> None:
        self.add(FILE_READ_ERROR, f"bootstrap file `{name}` could not be read: {reason}", file=path)

    def file_outside_root(self, name: str, path: str, target: str) -> None:
        self.add(
            FILE_OUTSIDE_ROOT,
            f"`{name}` was not read: it resolves to {target}, outside every runtime home",
            file=path,
        )

    def file_filtered_by_profile(self, name: str, path: str) -> None:
        self.add(FILE_FILTERED_BY_PROFILE, f"bootstrap file `{name}` filtered by profile", file=path)

    def file_truncated(self, name: str, path: str, original: str, kept: int) -> None:
        self.add(
            FILE_TRUNCATED,
            f"bootstrap file `{name}` truncated by per-file limit: {original} -> {kept} chars",
            file=path,
        )

    def file_control_characters(
        self, name: str, path: str, count: int, section_id: str | None = None
    ) -> None:
        self.add(
            FILE_CONTROL_CHARACTERS,
            f"`{name}` held {count} control character(s) (such as NUL or escape), shown as U+FFFD",
            file=path,
            section_id=section_id,
        )

    def total_budget_truncated(self, name: str, path: str, original: int, kept: int) -> None:
        self.add(
            TOTAL_BUDGET_TRUNCATED,
            f"bootstrap file `{name}` truncated by total budget: {original} -> {kept} chars",
            file=path,
        )

    def dynamic_section_truncated(
        self, section_id: str, original: int, kept: int, hook_source: str | None = None
    ) -> None:
        self.add(
            DYNAMIC_SECTION_TRUNCATED,
            f"dynamic prompt section `{section_id}` truncated: {original} -> {kept} chars",
            section_id=section_id,
            hook_source=hook_source,
        )

    def dynamic_section_omitted(self, section_id: str, reason: str, hook_source: str | None = None) -> None:
        self.add(
            DYNAMIC_SECTION_OMITTED,
            f"dynamic prompt section `{section_id}` omitted: {reason}",
            section_id=section_id,
            hook_source=hook_source,
        )
