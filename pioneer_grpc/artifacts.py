"""The artifact block: metadata of a message's artifacts, appended to its text.

Artifacts never travel as bytes inside a prompt; the model sees one line per
artifact (id, version, name, kind and what else is known) so it can refer to
them or ask for them with a tool. Format of the original:

    Available artifacts from this user message:
    - artifactId=a1, versionId=v1, name="photo.jpg", kind=image, mime=image/jpeg, size=842 KB, role=user.
"""

from __future__ import annotations

from collections.abc import Iterable

from pioneer_grpc.v1 import common_pb2

_KB = 1024
_MB = 1024 * _KB
_GB = 1024 * _MB


def message_header(role: str) -> str:
    """`role` is "user" or "assistant" (any role name works the same way)."""
    return f"Available artifacts from this {role} message:"


def format_size(size_bytes: int) -> str:
    if size_bytes < _KB:
        return f"{size_bytes} B"
    if size_bytes < _MB:
        return f"{size_bytes / _KB:.0f} KB"
    if size_bytes < _GB:
        return f"{size_bytes / _MB:.1f} MB"
    return f"{size_bytes / _GB:.1f} GB"


def escape_name(name: str) -> str:
    """Quote-safe display name, escaped the way the original's debug formatting does."""
    out: list[str] = []
    for ch in name:
        if ch == "\\":
            out.append("\\\\")
        elif ch == '"':
            out.append('\\"')
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\r":
            out.append("\\r")
        elif ch == "\t":
            out.append("\\t")
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\u{{{ord(ch):x}}}")
        else:
            out.append(ch)
    return "".join(out)


def format_artifact_line(ref: common_pb2.ArtifactRef) -> str:
    version = ref.version_id if ref.HasField("version_id") else "null"
    fields = [
        f"artifactId={ref.artifact_id}",
        f"versionId={version}",
        f'name="{escape_name(ref.display_name)}"',
        f"kind={ref.kind}",
    ]
    if ref.HasField("mime_type"):
        fields.append(f"mime={ref.mime_type}")
    if ref.HasField("size_bytes"):
        fields.append(f"size={format_size(ref.size_bytes)}")
    if ref.HasField("role"):
        fields.append(f"role={ref.role}")
    return "- " + ", ".join(fields) + "."


def format_artifact_block(header: str, refs: Iterable[common_pb2.ArtifactRef]) -> str:
    """Header plus one line per artifact, deduplicated by (artifact_id, version_id).

    Returns "" when there is nothing to list, so callers can skip the blank line.
    """
    seen: set[tuple[str, str | None]] = set()
    lines: list[str] = []
    for ref in refs:
        key = (ref.artifact_id, ref.version_id if ref.HasField("version_id") else None)
        if key in seen:
            continue
        seen.add(key)
        lines.append(format_artifact_line(ref))
    if not lines:
        return ""
    return "\n".join([header, *lines])


def append_artifact_block(text: str, header: str, refs: Iterable[common_pb2.ArtifactRef]) -> str:
    """`text` with the block appended after a blank line (the block alone when text is empty).

    Idempotent: a text that already ends with this block (history returns
    messages with their block in `content`) comes back unchanged.
    """
    block = format_artifact_block(header, refs)
    if not block or text == block or text.endswith("\n\n" + block):
        return text
    return f"{text}\n\n{block}" if text else block
