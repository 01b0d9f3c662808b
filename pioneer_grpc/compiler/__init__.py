"""Prompt compiler: ordered sections, a cache boundary, fingerprints and a manifest.

Pure core: no grpc, no database. It takes and returns the generated protobuf
messages (`PromptCompileInput` -> `CompiledPromptPayload`), raises the domain
errors of `pioneer_grpc.errors`, and reads only files inside the runtime homes
it is given.

Section order (id, title), the seed's table plus two placed rows (*):

  stable   identity_base                 Identity
           assistant_safety              Safety
           soul_core                     Soul Core        SOUL.md
           identity_core                 Identity Core    IDENTITY.md
           user_persona                  User Persona     USER.md
           tool_recovery_policy          Tool Recovery Policy
  ---- cache boundary ----
  dynamic  current_permissions           Current Permissions
           task_orchestration_policy     Task Orchestration
           memory_recall                 Memory Recall
         * thread_context                Thread Context   (right after memory recall: both are recall)
           artifact_references           Artifact References
           request_tools.hidden_domains  Hidden Tool Domains
           agents_md                     AGENTS.md
         * caller dynamic sections       "{title}" or "Dynamic: {id}", in request order
           recovery_continuation         Recovery Continuation
           skills_runtime_prompt         Skills Runtime
           retry_runtime_instruction     Retry Instruction
           dynamic_context               Dynamic Context
           extra_system                  Extra System

Identity: the server's configured persona (settings.CompileSettings; the
seed's text by default), a request's `persona` in its place, or nothing with
`omit_persona`. Bootstrap headings name their files relative to the home
(`~/.pioneer/SOUL.md`), so replicas agree on the stable text.

Reuse: the server compiles through cache.CompileCache, which hands out a copy of
an earlier payload for the same input while every filesystem answer that compile
depended on (fsview.FsView: lookups, symlink targets, identities of files read)
is still the same, and compiles afresh otherwise. The output is the same either way.

Profiles: FULL (and UNSPECIFIED) renders every section that has something to
say; MINIMAL renders identity, safety and the bootstrap files only; NONE renders
only the identity section (the bootstrap files are reported as filtered by
profile). Sections with nothing to say are absent.
"""

from pioneer_grpc.compiler.boundary import CACHE_BOUNDARY
from pioneer_grpc.compiler.compile import compile_prompt
from pioneer_grpc.compiler.seed import ensure_bootstrap_files
from pioneer_grpc.compiler.settings import CompileSettings

__all__ = ["CACHE_BOUNDARY", "CompileSettings", "compile_prompt", "ensure_bootstrap_files"]
