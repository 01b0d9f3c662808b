from google.api import field_behavior_pb2 as _field_behavior_pb2
from pioneer_grpc.v1 import common_pb2 as _common_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class PromptProfile(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    PROMPT_PROFILE_UNSPECIFIED: _ClassVar[PromptProfile]
    PROMPT_PROFILE_FULL: _ClassVar[PromptProfile]
    PROMPT_PROFILE_MINIMAL: _ClassVar[PromptProfile]
    PROMPT_PROFILE_NONE: _ClassVar[PromptProfile]

class SectionStability(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SECTION_STABILITY_UNSPECIFIED: _ClassVar[SectionStability]
    SECTION_STABILITY_STABLE: _ClassVar[SectionStability]
    SECTION_STABILITY_DYNAMIC: _ClassVar[SectionStability]

class MemoryPolicy(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    MEMORY_POLICY_UNSPECIFIED: _ClassVar[MemoryPolicy]
    MEMORY_POLICY_FULL: _ClassVar[MemoryPolicy]
    MEMORY_POLICY_READ_ONLY: _ClassVar[MemoryPolicy]
    MEMORY_POLICY_FORGET_ONLY: _ClassVar[MemoryPolicy]
    MEMORY_POLICY_DISABLED: _ClassVar[MemoryPolicy]

class ThreadContextSource(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    THREAD_CONTEXT_SOURCE_UNSPECIFIED: _ClassVar[ThreadContextSource]
    THREAD_CONTEXT_SOURCE_CURRENT_THREAD: _ClassVar[ThreadContextSource]
    THREAD_CONTEXT_SOURCE_RELATED_THREAD: _ClassVar[ThreadContextSource]
    THREAD_CONTEXT_SOURCE_WORKSPACE_THREAD: _ClassVar[ThreadContextSource]
    THREAD_CONTEXT_SOURCE_CURRENT_TASK: _ClassVar[ThreadContextSource]
    THREAD_CONTEXT_SOURCE_COMPLETED_TASK: _ClassVar[ThreadContextSource]

class PermissionMode(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    PERMISSION_MODE_UNSPECIFIED: _ClassVar[PermissionMode]
    PERMISSION_MODE_ASK: _ClassVar[PermissionMode]
    PERMISSION_MODE_AUTO: _ClassVar[PermissionMode]
    PERMISSION_MODE_FULL_ACCESS: _ClassVar[PermissionMode]

class PermissionDecision(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    PERMISSION_DECISION_UNSPECIFIED: _ClassVar[PermissionDecision]
    PERMISSION_DECISION_ASK: _ClassVar[PermissionDecision]
    PERMISSION_DECISION_ALLOW: _ClassVar[PermissionDecision]
    PERMISSION_DECISION_DENY: _ClassVar[PermissionDecision]

class HookPhase(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    HOOK_PHASE_UNSPECIFIED: _ClassVar[HookPhase]
    HOOK_PHASE_TURN_PRE_PROMPT_CONTEXT: _ClassVar[HookPhase]
    HOOK_PHASE_TURN_POST_PREFLIGHT_PROMPT_CONTEXT: _ClassVar[HookPhase]
    HOOK_PHASE_TURN_PRE_PROMPT_COMPILE: _ClassVar[HookPhase]
    HOOK_PHASE_RUNTIME_TURN_PRE_CONTEXT: _ClassVar[HookPhase]

class ContributionKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    CONTRIBUTION_KIND_UNSPECIFIED: _ClassVar[ContributionKind]
    CONTRIBUTION_KIND_PROMPT_CONTEXT: _ClassVar[ContributionKind]
    CONTRIBUTION_KIND_THREAD_CONTEXT: _ClassVar[ContributionKind]
    CONTRIBUTION_KIND_PROMPT_SECTION: _ClassVar[ContributionKind]
    CONTRIBUTION_KIND_PROMPT_MANIFEST_DIAGNOSTIC: _ClassVar[ContributionKind]
    CONTRIBUTION_KIND_RUNTIME_FAILURE: _ClassVar[ContributionKind]

class Truncation(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    TRUNCATION_UNSPECIFIED: _ClassVar[Truncation]
    TRUNCATION_NONE: _ClassVar[Truncation]
    TRUNCATION_HOOK: _ClassVar[Truncation]
    TRUNCATION_PROMPT: _ClassVar[Truncation]
    TRUNCATION_HOOK_AND_PROMPT: _ClassVar[Truncation]
    TRUNCATION_UNKNOWN: _ClassVar[Truncation]

class SourceStatus(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SOURCE_STATUS_UNSPECIFIED: _ClassVar[SourceStatus]
    SOURCE_STATUS_LOADED: _ClassVar[SourceStatus]
    SOURCE_STATUS_MISSING: _ClassVar[SourceStatus]
    SOURCE_STATUS_READ_ERROR: _ClassVar[SourceStatus]
    SOURCE_STATUS_TRUNCATED: _ClassVar[SourceStatus]
PROMPT_PROFILE_UNSPECIFIED: PromptProfile
PROMPT_PROFILE_FULL: PromptProfile
PROMPT_PROFILE_MINIMAL: PromptProfile
PROMPT_PROFILE_NONE: PromptProfile
SECTION_STABILITY_UNSPECIFIED: SectionStability
SECTION_STABILITY_STABLE: SectionStability
SECTION_STABILITY_DYNAMIC: SectionStability
MEMORY_POLICY_UNSPECIFIED: MemoryPolicy
MEMORY_POLICY_FULL: MemoryPolicy
MEMORY_POLICY_READ_ONLY: MemoryPolicy
MEMORY_POLICY_FORGET_ONLY: MemoryPolicy
MEMORY_POLICY_DISABLED: MemoryPolicy
THREAD_CONTEXT_SOURCE_UNSPECIFIED: ThreadContextSource
THREAD_CONTEXT_SOURCE_CURRENT_THREAD: ThreadContextSource
THREAD_CONTEXT_SOURCE_RELATED_THREAD: ThreadContextSource
THREAD_CONTEXT_SOURCE_WORKSPACE_THREAD: ThreadContextSource
THREAD_CONTEXT_SOURCE_CURRENT_TASK: ThreadContextSource
THREAD_CONTEXT_SOURCE_COMPLETED_TASK: ThreadContextSource
PERMISSION_MODE_UNSPECIFIED: PermissionMode
PERMISSION_MODE_ASK: PermissionMode
PERMISSION_MODE_AUTO: PermissionMode
PERMISSION_MODE_FULL_ACCESS: PermissionMode
PERMISSION_DECISION_UNSPECIFIED: PermissionDecision
PERMISSION_DECISION_ASK: PermissionDecision
PERMISSION_DECISION_ALLOW: PermissionDecision
PERMISSION_DECISION_DENY: PermissionDecision
HOOK_PHASE_UNSPECIFIED: HookPhase
HOOK_PHASE_TURN_PRE_PROMPT_CONTEXT: HookPhase
HOOK_PHASE_TURN_POST_PREFLIGHT_PROMPT_CONTEXT: HookPhase
HOOK_PHASE_TURN_PRE_PROMPT_COMPILE: HookPhase
HOOK_PHASE_RUNTIME_TURN_PRE_CONTEXT: HookPhase
CONTRIBUTION_KIND_UNSPECIFIED: ContributionKind
CONTRIBUTION_KIND_PROMPT_CONTEXT: ContributionKind
CONTRIBUTION_KIND_THREAD_CONTEXT: ContributionKind
CONTRIBUTION_KIND_PROMPT_SECTION: ContributionKind
CONTRIBUTION_KIND_PROMPT_MANIFEST_DIAGNOSTIC: ContributionKind
CONTRIBUTION_KIND_RUNTIME_FAILURE: ContributionKind
TRUNCATION_UNSPECIFIED: Truncation
TRUNCATION_NONE: Truncation
TRUNCATION_HOOK: Truncation
TRUNCATION_PROMPT: Truncation
TRUNCATION_HOOK_AND_PROMPT: Truncation
TRUNCATION_UNKNOWN: Truncation
SOURCE_STATUS_UNSPECIFIED: SourceStatus
SOURCE_STATUS_LOADED: SourceStatus
SOURCE_STATUS_MISSING: SourceStatus
SOURCE_STATUS_READ_ERROR: SourceStatus
SOURCE_STATUS_TRUNCATED: SourceStatus

class PromptLimits(_message.Message):
    __slots__ = ("max_chars_per_file", "max_chars_total", "max_chars_per_dynamic_section", "max_dynamic_chars_total", "max_dynamic_sections", "max_agents_md_chars", "max_skills_chars", "max_thread_context_chars")
    MAX_CHARS_PER_FILE_FIELD_NUMBER: _ClassVar[int]
    MAX_CHARS_TOTAL_FIELD_NUMBER: _ClassVar[int]
    MAX_CHARS_PER_DYNAMIC_SECTION_FIELD_NUMBER: _ClassVar[int]
    MAX_DYNAMIC_CHARS_TOTAL_FIELD_NUMBER: _ClassVar[int]
    MAX_DYNAMIC_SECTIONS_FIELD_NUMBER: _ClassVar[int]
    MAX_AGENTS_MD_CHARS_FIELD_NUMBER: _ClassVar[int]
    MAX_SKILLS_CHARS_FIELD_NUMBER: _ClassVar[int]
    MAX_THREAD_CONTEXT_CHARS_FIELD_NUMBER: _ClassVar[int]
    max_chars_per_file: int
    max_chars_total: int
    max_chars_per_dynamic_section: int
    max_dynamic_chars_total: int
    max_dynamic_sections: int
    max_agents_md_chars: int
    max_skills_chars: int
    max_thread_context_chars: int
    def __init__(self, max_chars_per_file: _Optional[int] = ..., max_chars_total: _Optional[int] = ..., max_chars_per_dynamic_section: _Optional[int] = ..., max_dynamic_chars_total: _Optional[int] = ..., max_dynamic_sections: _Optional[int] = ..., max_agents_md_chars: _Optional[int] = ..., max_skills_chars: _Optional[int] = ..., max_thread_context_chars: _Optional[int] = ...) -> None: ...

class Skill(_message.Message):
    __slots__ = ("slug", "display_name", "description", "body", "path_matched")
    SLUG_FIELD_NUMBER: _ClassVar[int]
    DISPLAY_NAME_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    BODY_FIELD_NUMBER: _ClassVar[int]
    PATH_MATCHED_FIELD_NUMBER: _ClassVar[int]
    slug: str
    display_name: str
    description: str
    body: str
    path_matched: bool
    def __init__(self, slug: _Optional[str] = ..., display_name: _Optional[str] = ..., description: _Optional[str] = ..., body: _Optional[str] = ..., path_matched: _Optional[bool] = ...) -> None: ...

class SkillsInput(_message.Message):
    __slots__ = ("active_skills", "include_read_skill_hint")
    ACTIVE_SKILLS_FIELD_NUMBER: _ClassVar[int]
    INCLUDE_READ_SKILL_HINT_FIELD_NUMBER: _ClassVar[int]
    active_skills: _containers.RepeatedCompositeFieldContainer[Skill]
    include_read_skill_hint: bool
    def __init__(self, active_skills: _Optional[_Iterable[_Union[Skill, _Mapping]]] = ..., include_read_skill_hint: _Optional[bool] = ...) -> None: ...

class MemoryItem(_message.Message):
    __slots__ = ("scope", "category", "content")
    SCOPE_FIELD_NUMBER: _ClassVar[int]
    CATEGORY_FIELD_NUMBER: _ClassVar[int]
    CONTENT_FIELD_NUMBER: _ClassVar[int]
    scope: str
    category: str
    content: str
    def __init__(self, scope: _Optional[str] = ..., category: _Optional[str] = ..., content: _Optional[str] = ...) -> None: ...

class MemoryRecall(_message.Message):
    __slots__ = ("policy", "items", "available_tools", "thread_context", "task_context")
    POLICY_FIELD_NUMBER: _ClassVar[int]
    ITEMS_FIELD_NUMBER: _ClassVar[int]
    AVAILABLE_TOOLS_FIELD_NUMBER: _ClassVar[int]
    THREAD_CONTEXT_FIELD_NUMBER: _ClassVar[int]
    TASK_CONTEXT_FIELD_NUMBER: _ClassVar[int]
    policy: MemoryPolicy
    items: _containers.RepeatedCompositeFieldContainer[MemoryItem]
    available_tools: _containers.RepeatedScalarFieldContainer[str]
    thread_context: str
    task_context: str
    def __init__(self, policy: _Optional[_Union[MemoryPolicy, str]] = ..., items: _Optional[_Iterable[_Union[MemoryItem, _Mapping]]] = ..., available_tools: _Optional[_Iterable[str]] = ..., thread_context: _Optional[str] = ..., task_context: _Optional[str] = ...) -> None: ...

class AgentsMdContent(_message.Message):
    __slots__ = ("content", "source_label")
    CONTENT_FIELD_NUMBER: _ClassVar[int]
    SOURCE_LABEL_FIELD_NUMBER: _ClassVar[int]
    content: str
    source_label: str
    def __init__(self, content: _Optional[str] = ..., source_label: _Optional[str] = ...) -> None: ...

class AgentsMdSource(_message.Message):
    __slots__ = ("content", "thread_folder")
    CONTENT_FIELD_NUMBER: _ClassVar[int]
    THREAD_FOLDER_FIELD_NUMBER: _ClassVar[int]
    content: AgentsMdContent
    thread_folder: str
    def __init__(self, content: _Optional[_Union[AgentsMdContent, _Mapping]] = ..., thread_folder: _Optional[str] = ...) -> None: ...

class SnippetProvenance(_message.Message):
    __slots__ = ("workspace", "thread_id", "turn_id", "task_id", "timestamp", "source", "score", "boundary")
    WORKSPACE_FIELD_NUMBER: _ClassVar[int]
    THREAD_ID_FIELD_NUMBER: _ClassVar[int]
    TURN_ID_FIELD_NUMBER: _ClassVar[int]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    TIMESTAMP_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    SCORE_FIELD_NUMBER: _ClassVar[int]
    BOUNDARY_FIELD_NUMBER: _ClassVar[int]
    workspace: str
    thread_id: str
    turn_id: str
    task_id: str
    timestamp: str
    source: ThreadContextSource
    score: float
    boundary: str
    def __init__(self, workspace: _Optional[str] = ..., thread_id: _Optional[str] = ..., turn_id: _Optional[str] = ..., task_id: _Optional[str] = ..., timestamp: _Optional[str] = ..., source: _Optional[_Union[ThreadContextSource, str]] = ..., score: _Optional[float] = ..., boundary: _Optional[str] = ...) -> None: ...

class ThreadContextSnippet(_message.Message):
    __slots__ = ("snippet_id", "text", "provenance", "artifacts")
    SNIPPET_ID_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    PROVENANCE_FIELD_NUMBER: _ClassVar[int]
    ARTIFACTS_FIELD_NUMBER: _ClassVar[int]
    snippet_id: str
    text: str
    provenance: SnippetProvenance
    artifacts: _containers.RepeatedCompositeFieldContainer[_common_pb2.ArtifactRef]
    def __init__(self, snippet_id: _Optional[str] = ..., text: _Optional[str] = ..., provenance: _Optional[_Union[SnippetProvenance, _Mapping]] = ..., artifacts: _Optional[_Iterable[_Union[_common_pb2.ArtifactRef, _Mapping]]] = ...) -> None: ...

class HiddenToolDomain(_message.Message):
    __slots__ = ("domain", "tools")
    DOMAIN_FIELD_NUMBER: _ClassVar[int]
    TOOLS_FIELD_NUMBER: _ClassVar[int]
    domain: str
    tools: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, domain: _Optional[str] = ..., tools: _Optional[_Iterable[str]] = ...) -> None: ...

class PermissionRule(_message.Message):
    __slots__ = ("category", "decision")
    CATEGORY_FIELD_NUMBER: _ClassVar[int]
    DECISION_FIELD_NUMBER: _ClassVar[int]
    category: str
    decision: PermissionDecision
    def __init__(self, category: _Optional[str] = ..., decision: _Optional[_Union[PermissionDecision, str]] = ...) -> None: ...

class PermissionProfile(_message.Message):
    __slots__ = ("mode", "rules", "allowed_tools", "denied_tools", "allowed_paths")
    MODE_FIELD_NUMBER: _ClassVar[int]
    RULES_FIELD_NUMBER: _ClassVar[int]
    ALLOWED_TOOLS_FIELD_NUMBER: _ClassVar[int]
    DENIED_TOOLS_FIELD_NUMBER: _ClassVar[int]
    ALLOWED_PATHS_FIELD_NUMBER: _ClassVar[int]
    mode: PermissionMode
    rules: _containers.RepeatedCompositeFieldContainer[PermissionRule]
    allowed_tools: _containers.RepeatedScalarFieldContainer[str]
    denied_tools: _containers.RepeatedScalarFieldContainer[str]
    allowed_paths: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, mode: _Optional[_Union[PermissionMode, str]] = ..., rules: _Optional[_Iterable[_Union[PermissionRule, _Mapping]]] = ..., allowed_tools: _Optional[_Iterable[str]] = ..., denied_tools: _Optional[_Iterable[str]] = ..., allowed_paths: _Optional[_Iterable[str]] = ...) -> None: ...

class HookRef(_message.Message):
    __slots__ = ("hook_id", "subscription_id", "phase", "contribution_id", "contribution_hash")
    HOOK_ID_FIELD_NUMBER: _ClassVar[int]
    SUBSCRIPTION_ID_FIELD_NUMBER: _ClassVar[int]
    PHASE_FIELD_NUMBER: _ClassVar[int]
    CONTRIBUTION_ID_FIELD_NUMBER: _ClassVar[int]
    CONTRIBUTION_HASH_FIELD_NUMBER: _ClassVar[int]
    hook_id: str
    subscription_id: str
    phase: HookPhase
    contribution_id: str
    contribution_hash: str
    def __init__(self, hook_id: _Optional[str] = ..., subscription_id: _Optional[str] = ..., phase: _Optional[_Union[HookPhase, str]] = ..., contribution_id: _Optional[str] = ..., contribution_hash: _Optional[str] = ...) -> None: ...

class HookSource(_message.Message):
    __slots__ = ("source", "section_id", "contribution_kind", "priority", "source_count", "truncation", "label")
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    SECTION_ID_FIELD_NUMBER: _ClassVar[int]
    CONTRIBUTION_KIND_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_FIELD_NUMBER: _ClassVar[int]
    SOURCE_COUNT_FIELD_NUMBER: _ClassVar[int]
    TRUNCATION_FIELD_NUMBER: _ClassVar[int]
    LABEL_FIELD_NUMBER: _ClassVar[int]
    source: HookRef
    section_id: str
    contribution_kind: ContributionKind
    priority: int
    source_count: int
    truncation: Truncation
    label: str
    def __init__(self, source: _Optional[_Union[HookRef, _Mapping]] = ..., section_id: _Optional[str] = ..., contribution_kind: _Optional[_Union[ContributionKind, str]] = ..., priority: _Optional[int] = ..., source_count: _Optional[int] = ..., truncation: _Optional[_Union[Truncation, str]] = ..., label: _Optional[str] = ...) -> None: ...

class DynamicSection(_message.Message):
    __slots__ = ("id", "title", "content", "max_chars", "truncated", "hook_source")
    ID_FIELD_NUMBER: _ClassVar[int]
    TITLE_FIELD_NUMBER: _ClassVar[int]
    CONTENT_FIELD_NUMBER: _ClassVar[int]
    MAX_CHARS_FIELD_NUMBER: _ClassVar[int]
    TRUNCATED_FIELD_NUMBER: _ClassVar[int]
    HOOK_SOURCE_FIELD_NUMBER: _ClassVar[int]
    id: str
    title: str
    content: str
    max_chars: int
    truncated: bool
    hook_source: HookSource
    def __init__(self, id: _Optional[str] = ..., title: _Optional[str] = ..., content: _Optional[str] = ..., max_chars: _Optional[int] = ..., truncated: _Optional[bool] = ..., hook_source: _Optional[_Union[HookSource, _Mapping]] = ...) -> None: ...

class PromptCompileInput(_message.Message):
    __slots__ = ("workspace_root", "profile", "skills_prompt", "retry_instruction", "include_tool_recovery_policy", "include_task_orchestration_policy", "continue_generation_hint", "dynamic_context", "extra_system", "limits", "skills", "memory_recall", "agents_md", "thread_context", "hidden_tool_domains", "permissions", "dynamic_sections", "hook_sources", "persona", "omit_persona", "identity_files")
    WORKSPACE_ROOT_FIELD_NUMBER: _ClassVar[int]
    PROFILE_FIELD_NUMBER: _ClassVar[int]
    SKILLS_PROMPT_FIELD_NUMBER: _ClassVar[int]
    RETRY_INSTRUCTION_FIELD_NUMBER: _ClassVar[int]
    INCLUDE_TOOL_RECOVERY_POLICY_FIELD_NUMBER: _ClassVar[int]
    INCLUDE_TASK_ORCHESTRATION_POLICY_FIELD_NUMBER: _ClassVar[int]
    CONTINUE_GENERATION_HINT_FIELD_NUMBER: _ClassVar[int]
    DYNAMIC_CONTEXT_FIELD_NUMBER: _ClassVar[int]
    EXTRA_SYSTEM_FIELD_NUMBER: _ClassVar[int]
    LIMITS_FIELD_NUMBER: _ClassVar[int]
    SKILLS_FIELD_NUMBER: _ClassVar[int]
    MEMORY_RECALL_FIELD_NUMBER: _ClassVar[int]
    AGENTS_MD_FIELD_NUMBER: _ClassVar[int]
    THREAD_CONTEXT_FIELD_NUMBER: _ClassVar[int]
    HIDDEN_TOOL_DOMAINS_FIELD_NUMBER: _ClassVar[int]
    PERMISSIONS_FIELD_NUMBER: _ClassVar[int]
    DYNAMIC_SECTIONS_FIELD_NUMBER: _ClassVar[int]
    HOOK_SOURCES_FIELD_NUMBER: _ClassVar[int]
    PERSONA_FIELD_NUMBER: _ClassVar[int]
    OMIT_PERSONA_FIELD_NUMBER: _ClassVar[int]
    IDENTITY_FILES_FIELD_NUMBER: _ClassVar[int]
    workspace_root: str
    profile: PromptProfile
    skills_prompt: str
    retry_instruction: str
    include_tool_recovery_policy: bool
    include_task_orchestration_policy: bool
    continue_generation_hint: bool
    dynamic_context: str
    extra_system: str
    limits: PromptLimits
    skills: SkillsInput
    memory_recall: MemoryRecall
    agents_md: AgentsMdSource
    thread_context: _containers.RepeatedCompositeFieldContainer[ThreadContextSnippet]
    hidden_tool_domains: _containers.RepeatedCompositeFieldContainer[HiddenToolDomain]
    permissions: PermissionProfile
    dynamic_sections: _containers.RepeatedCompositeFieldContainer[DynamicSection]
    hook_sources: _containers.RepeatedCompositeFieldContainer[HookSource]
    persona: str
    omit_persona: bool
    identity_files: bool
    def __init__(self, workspace_root: _Optional[str] = ..., profile: _Optional[_Union[PromptProfile, str]] = ..., skills_prompt: _Optional[str] = ..., retry_instruction: _Optional[str] = ..., include_tool_recovery_policy: _Optional[bool] = ..., include_task_orchestration_policy: _Optional[bool] = ..., continue_generation_hint: _Optional[bool] = ..., dynamic_context: _Optional[str] = ..., extra_system: _Optional[str] = ..., limits: _Optional[_Union[PromptLimits, _Mapping]] = ..., skills: _Optional[_Union[SkillsInput, _Mapping]] = ..., memory_recall: _Optional[_Union[MemoryRecall, _Mapping]] = ..., agents_md: _Optional[_Union[AgentsMdSource, _Mapping]] = ..., thread_context: _Optional[_Iterable[_Union[ThreadContextSnippet, _Mapping]]] = ..., hidden_tool_domains: _Optional[_Iterable[_Union[HiddenToolDomain, _Mapping]]] = ..., permissions: _Optional[_Union[PermissionProfile, _Mapping]] = ..., dynamic_sections: _Optional[_Iterable[_Union[DynamicSection, _Mapping]]] = ..., hook_sources: _Optional[_Iterable[_Union[HookSource, _Mapping]]] = ..., persona: _Optional[str] = ..., omit_persona: _Optional[bool] = ..., identity_files: _Optional[bool] = ...) -> None: ...

class PromptSection(_message.Message):
    __slots__ = ("id", "stability", "title", "content", "sources", "fingerprint")
    ID_FIELD_NUMBER: _ClassVar[int]
    STABILITY_FIELD_NUMBER: _ClassVar[int]
    TITLE_FIELD_NUMBER: _ClassVar[int]
    CONTENT_FIELD_NUMBER: _ClassVar[int]
    SOURCES_FIELD_NUMBER: _ClassVar[int]
    FINGERPRINT_FIELD_NUMBER: _ClassVar[int]
    id: str
    stability: SectionStability
    title: str
    content: str
    sources: _containers.RepeatedScalarFieldContainer[str]
    fingerprint: str
    def __init__(self, id: _Optional[str] = ..., stability: _Optional[_Union[SectionStability, str]] = ..., title: _Optional[str] = ..., content: _Optional[str] = ..., sources: _Optional[_Iterable[str]] = ..., fingerprint: _Optional[str] = ...) -> None: ...

class SourceManifestEntry(_message.Message):
    __slots__ = ("file", "path", "status", "chars")
    FILE_FIELD_NUMBER: _ClassVar[int]
    PATH_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    CHARS_FIELD_NUMBER: _ClassVar[int]
    file: str
    path: str
    status: SourceStatus
    chars: int
    def __init__(self, file: _Optional[str] = ..., path: _Optional[str] = ..., status: _Optional[_Union[SourceStatus, str]] = ..., chars: _Optional[int] = ...) -> None: ...

class PromptDiagnostic(_message.Message):
    __slots__ = ("code", "message", "file", "section_id", "hook_source")
    CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    FILE_FIELD_NUMBER: _ClassVar[int]
    SECTION_ID_FIELD_NUMBER: _ClassVar[int]
    HOOK_SOURCE_FIELD_NUMBER: _ClassVar[int]
    code: str
    message: str
    file: str
    section_id: str
    hook_source: str
    def __init__(self, code: _Optional[str] = ..., message: _Optional[str] = ..., file: _Optional[str] = ..., section_id: _Optional[str] = ..., hook_source: _Optional[str] = ...) -> None: ...

class SectionFingerprint(_message.Message):
    __slots__ = ("section_id", "stability", "fingerprint", "chars")
    SECTION_ID_FIELD_NUMBER: _ClassVar[int]
    STABILITY_FIELD_NUMBER: _ClassVar[int]
    FINGERPRINT_FIELD_NUMBER: _ClassVar[int]
    CHARS_FIELD_NUMBER: _ClassVar[int]
    section_id: str
    stability: SectionStability
    fingerprint: str
    chars: int
    def __init__(self, section_id: _Optional[str] = ..., stability: _Optional[_Union[SectionStability, str]] = ..., fingerprint: _Optional[str] = ..., chars: _Optional[int] = ...) -> None: ...

class PromptManifest(_message.Message):
    __slots__ = ("compiler_version", "profile", "section_ids", "fingerprint_stable", "fingerprint_dynamic", "fingerprint_full", "section_fingerprints", "diagnostics", "hook_sources", "source_manifest", "thread_id", "turn_id")
    COMPILER_VERSION_FIELD_NUMBER: _ClassVar[int]
    PROFILE_FIELD_NUMBER: _ClassVar[int]
    SECTION_IDS_FIELD_NUMBER: _ClassVar[int]
    FINGERPRINT_STABLE_FIELD_NUMBER: _ClassVar[int]
    FINGERPRINT_DYNAMIC_FIELD_NUMBER: _ClassVar[int]
    FINGERPRINT_FULL_FIELD_NUMBER: _ClassVar[int]
    SECTION_FINGERPRINTS_FIELD_NUMBER: _ClassVar[int]
    DIAGNOSTICS_FIELD_NUMBER: _ClassVar[int]
    HOOK_SOURCES_FIELD_NUMBER: _ClassVar[int]
    SOURCE_MANIFEST_FIELD_NUMBER: _ClassVar[int]
    THREAD_ID_FIELD_NUMBER: _ClassVar[int]
    TURN_ID_FIELD_NUMBER: _ClassVar[int]
    compiler_version: str
    profile: PromptProfile
    section_ids: _containers.RepeatedScalarFieldContainer[str]
    fingerprint_stable: str
    fingerprint_dynamic: str
    fingerprint_full: str
    section_fingerprints: _containers.RepeatedCompositeFieldContainer[SectionFingerprint]
    diagnostics: _containers.RepeatedCompositeFieldContainer[PromptDiagnostic]
    hook_sources: _containers.RepeatedCompositeFieldContainer[HookSource]
    source_manifest: _containers.RepeatedCompositeFieldContainer[SourceManifestEntry]
    thread_id: str
    turn_id: str
    def __init__(self, compiler_version: _Optional[str] = ..., profile: _Optional[_Union[PromptProfile, str]] = ..., section_ids: _Optional[_Iterable[str]] = ..., fingerprint_stable: _Optional[str] = ..., fingerprint_dynamic: _Optional[str] = ..., fingerprint_full: _Optional[str] = ..., section_fingerprints: _Optional[_Iterable[_Union[SectionFingerprint, _Mapping]]] = ..., diagnostics: _Optional[_Iterable[_Union[PromptDiagnostic, _Mapping]]] = ..., hook_sources: _Optional[_Iterable[_Union[HookSource, _Mapping]]] = ..., source_manifest: _Optional[_Iterable[_Union[SourceManifestEntry, _Mapping]]] = ..., thread_id: _Optional[str] = ..., turn_id: _Optional[str] = ...) -> None: ...

class CompiledPromptPayload(_message.Message):
    __slots__ = ("stable_system_text", "dynamic_system_text", "full_system_text", "boundary_marker", "sections", "manifest")
    STABLE_SYSTEM_TEXT_FIELD_NUMBER: _ClassVar[int]
    DYNAMIC_SYSTEM_TEXT_FIELD_NUMBER: _ClassVar[int]
    FULL_SYSTEM_TEXT_FIELD_NUMBER: _ClassVar[int]
    BOUNDARY_MARKER_FIELD_NUMBER: _ClassVar[int]
    SECTIONS_FIELD_NUMBER: _ClassVar[int]
    MANIFEST_FIELD_NUMBER: _ClassVar[int]
    stable_system_text: str
    dynamic_system_text: str
    full_system_text: str
    boundary_marker: str
    sections: _containers.RepeatedCompositeFieldContainer[PromptSection]
    manifest: PromptManifest
    def __init__(self, stable_system_text: _Optional[str] = ..., dynamic_system_text: _Optional[str] = ..., full_system_text: _Optional[str] = ..., boundary_marker: _Optional[str] = ..., sections: _Optional[_Iterable[_Union[PromptSection, _Mapping]]] = ..., manifest: _Optional[_Union[PromptManifest, _Mapping]] = ...) -> None: ...
