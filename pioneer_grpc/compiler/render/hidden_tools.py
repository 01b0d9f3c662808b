"""The hidden tool domains section: a compact catalog for request_tools.

It names each hidden domain and its exact tools so the model knows what to
request; it makes nothing callable (tool schemas travel in ChatRequest.tools).
The whole section stays within HIDDEN_TOOL_DOMAINS_MAX_CHARS; domains that do
not fit are counted in the last line.
"""

from __future__ import annotations

from pioneer_grpc.compiler import diagnostics as codes
from pioneer_grpc.compiler.diagnostics import CompileLog
from pioneer_grpc.compiler.limits import HIDDEN_TOOL_DOMAINS_MAX_CHARS
from pioneer_grpc.compiler.sections import HIDDEN_TOOL_DOMAINS
from pioneer_grpc.compiler.text import one_line
from pioneer_grpc.v1 import prompt_pb2

INTRO = (
    "More tools exist than are visible now. When you need one listed here, call request_tools with its "
    "domain; the domain's tools become callable afterwards."
)
DOMAINS_HEADER = "Domains:"


def _domain_line(domain: prompt_pb2.HiddenToolDomain) -> str:
    tools = [one_line(t) for t in domain.tools if t.strip()]
    name = one_line(domain.domain)
    return f"- {name}: {', '.join(tools)}." if tools else f"- {name}."


def _left_out_line(count: int) -> str:
    return f"- ({count} more domains not listed.)"


def render_hidden_tool_domains(domains: list[prompt_pb2.HiddenToolDomain], log: CompileLog) -> str:
    seen: set[str] = set()
    lines: list[str] = []
    for domain in domains:
        name = one_line(domain.domain)
        if name and name not in seen:
            seen.add(name)
            lines.append(_domain_line(domain))
    if not lines:
        return ""
    limit = HIDDEN_TOOL_DOMAINS_MAX_CHARS
    whole = "\n".join([INTRO, DOMAINS_HEADER, *lines])
    if len(whole) <= limit:
        return whole
    reserve = 1 + len(_left_out_line(len(lines)))
    text = f"{INTRO}\n{DOMAINS_HEADER}"
    kept = 0
    for line in lines:
        if len(text) + 1 + len(line) + reserve <= limit:
            text = f"{text}\n{line}"
            kept += 1
    left_out = len(lines) - kept
    log.add(
        codes.HIDDEN_TOOL_DOMAINS_TRUNCATED,
        f"{left_out} of {len(lines)} hidden tool domains left out for the {limit}-char catalog budget",
        section_id=HIDDEN_TOOL_DOMAINS,
    )
    return f"{text}\n{_left_out_line(left_out)}"
