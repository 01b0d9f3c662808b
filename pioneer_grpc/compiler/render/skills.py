"""The skills runtime section: a compact list of active skills, a few full bodies, the caller's text.

Every active skill is listed with its exact read_skill slug and when to use it.
Full bodies are added only for path-matched skills, only when at most
SKILL_BODIES_MAX_ACTIVE_SKILLS skills are active, sorted by slug, each only if
it still fits the section budget; the rest are named in a note. The
pre-rendered `skills_prompt` is appended last. The whole section content never
exceeds `max_chars`.
"""

from __future__ import annotations

from pioneer_grpc.compiler import diagnostics as codes
from pioneer_grpc.compiler.diagnostics import CompileLog
from pioneer_grpc.compiler.limits import SKILL_BODIES_MAX_ACTIVE_SKILLS
from pioneer_grpc.compiler.sections import SKILLS_RUNTIME
from pioneer_grpc.compiler.text import clip, clip_with_ellipsis, one_line, sanitize
from pioneer_grpc.v1 import prompt_pb2

HEADER = "[Skills]"
INTRO = "These skills are available for this turn:"
FOOTER = (
    "Before following a skill's specialised instructions, call read_skill with its exact slug "
    "(the value in backticks, not the display name)."
)
READ_SKILL_HINT = "Load the exact instructions of any skill above on demand with read_skill."
CUT_NOTICE = "\n[Skills section shortened to fit the prompt budget.]"


def _entry(skill: prompt_pb2.Skill) -> str:
    slug = one_line(skill.slug)
    lines = [f"- {one_line(skill.display_name) or slug}", f"  Skill slug for read_skill: `{slug}`"]
    if skill.description.strip():
        lines.append(f"  Use when: {one_line(skill.description)}")
    return "\n".join(lines)


def _omitted_note(slugs: list[str]) -> str:
    return "Full instructions left out to fit the budget: " + ", ".join(f"`{s}`" for s in slugs) + "."


def _unique_active(skills: prompt_pb2.SkillsInput) -> list[prompt_pb2.Skill]:
    seen: set[str] = set()
    active: list[prompt_pb2.Skill] = []
    for skill in skills.active_skills:
        slug = one_line(skill.slug)
        if slug and slug not in seen:
            seen.add(slug)
            active.append(skill)
    return active


def render_skills(skills: prompt_pb2.SkillsInput, skills_prompt: str, max_chars: int, log: CompileLog) -> str:
    active = _unique_active(skills)
    extra = sanitize(skills_prompt)
    listing = "\n".join([HEADER, INTRO, *(_entry(s) for s in active)]) if active else ""
    eligible: list[prompt_pb2.Skill] = []
    if len(active) <= SKILL_BODIES_MAX_ACTIVE_SKILLS:
        eligible = sorted((s for s in active if s.path_matched and s.body.strip()), key=lambda s: s.slug)

    def assemble(bodies: list[prompt_pb2.Skill], omitted: list[str]) -> str:
        parts = [listing] if listing else []
        parts += [f"[Skill Body: {one_line(s.slug)}]\n{sanitize(s.body)}" for s in bodies]
        if omitted:
            parts.append(_omitted_note(omitted))
            if skills.include_read_skill_hint:
                parts.append(READ_SKILL_HINT)
        if listing:
            parts.append(FOOTER)
        if extra:
            parts.append(extra)
        return "\n\n".join(parts)

    included: list[prompt_pb2.Skill] = []
    omitted: list[str] = []
    for index, skill in enumerate(eligible):
        # Assume every later body is left out too: the final text can then only be shorter.
        worst_case = omitted + [one_line(s.slug) for s in eligible[index + 1 :]]
        if len(assemble([*included, skill], worst_case)) <= max_chars:
            included.append(skill)
        else:
            omitted.append(one_line(skill.slug))
    text = assemble(included, omitted)
    if omitted:
        log.add(
            codes.SKILLS_TRUNCATED,
            f"skill bodies left out for the section budget: {', '.join(omitted)}",
            section_id=SKILLS_RUNTIME,
        )
    if len(text) > max_chars:
        original = len(text)
        if max_chars > len(CUT_NOTICE):
            text = clip_with_ellipsis(text, max_chars - len(CUT_NOTICE)) + CUT_NOTICE
        else:
            text = clip(text, max_chars)
        log.add(
            codes.SKILLS_TRUNCATED,
            f"skills section truncated: {original} -> {len(text)} chars",
            section_id=SKILLS_RUNTIME,
        )
    return text
