"""How a stored entry reads to a model, and the messages a load returns.

Message shape (the rule the provider renderers rely on): a returned ChatMessage
carries its artifact block inside `content`, because that is the text the model
reads and the text whose tokens were counted at append; `artifact_refs` is set
too, for renderers that want the structure. `pioneer_grpc.artifacts.
append_artifact_block` leaves a text that already ends with its block as it is,
so a renderer that appends the block from `artifact_refs` never adds it twice.
`reasoning_content` is stored for audit but not sent back to a model.
"""

from __future__ import annotations

from pioneer_grpc.artifacts import append_artifact_block, message_header
from pioneer_grpc.v1 import chat_pb2, history_pb2

ROLE_NAMES: dict[int, str] = {
    history_pb2.ENTRY_ROLE_USER: "user",
    history_pb2.ENTRY_ROLE_ASSISTANT: "assistant",
    history_pb2.ENTRY_ROLE_TOOL: "tool",
    history_pb2.ENTRY_ROLE_SYSTEM: "system",
}
CHAT_ROLES: dict[int, int] = {
    history_pb2.ENTRY_ROLE_USER: chat_pb2.CHAT_ROLE_USER,
    history_pb2.ENTRY_ROLE_ASSISTANT: chat_pb2.CHAT_ROLE_ASSISTANT,
    history_pb2.ENTRY_ROLE_TOOL: chat_pb2.CHAT_ROLE_TOOL,
    history_pb2.ENTRY_ROLE_SYSTEM: chat_pb2.CHAT_ROLE_SYSTEM,
}
CHAT_ROLE_NAMES: dict[int, str] = {
    chat_pb2.CHAT_ROLE_SYSTEM: "system",
    chat_pb2.CHAT_ROLE_USER: "user",
    chat_pb2.CHAT_ROLE_ASSISTANT: "assistant",
    chat_pb2.CHAT_ROLE_TOOL: "tool",
}

SUMMARY_PREFIX = "Summary of earlier conversation:\n"


def entry_text(entry: history_pb2.ConversationEntry) -> str:
    """The entry's content with its artifact block, exactly as a model reads it."""
    return append_artifact_block(entry.content, message_header(ROLE_NAMES[entry.role]), entry.artifact_refs)


def chat_text(message: chat_pb2.ChatMessage) -> str:
    role = CHAT_ROLE_NAMES.get(message.role, "user")
    return append_artifact_block(message.content, message_header(role), message.artifact_refs)


def counted_texts(text: str, tool_calls: list[tuple[str, str]]) -> list[str]:
    """Texts whose tokens make up a message's count: its text, then each call's name and arguments."""
    texts = [text]
    for name, arguments in tool_calls:
        texts.extend((name, arguments))
    return texts


def entry_counted_texts(entry: history_pb2.ConversationEntry) -> list[str]:
    """Its text, its text parts (images and documents are counted by provider rule at load), its calls."""
    texts = counted_texts(entry_text(entry), [(c.name, c.arguments) for c in entry.tool_calls])
    texts[1:1] = [p.text for p in entry.content_parts if p.WhichOneof("part") == "text"]
    return texts


def chat_counted_texts(message: chat_pb2.ChatMessage) -> list[str]:
    """As entry_counted_texts counts an entry: its text, its text parts, its calls."""
    texts = counted_texts(chat_text(message), [(c.name, c.arguments) for c in message.tool_calls])
    texts[1:1] = [p.text for p in message.content_parts if p.WhichOneof("part") == "text"]
    return texts


def to_chat_message(entry: history_pb2.ConversationEntry, content: str | None = None) -> chat_pb2.ChatMessage:
    """`content` replaces the entry's rendered text (a cut entry passes its cut text)."""
    return chat_pb2.ChatMessage(
        role=CHAT_ROLES[entry.role],  # type: ignore[arg-type]
        content=entry_text(entry) if content is None else content,
        tool_call_id=entry.tool_call_id,
        name=entry.name,
        tool_calls=entry.tool_calls,
        artifact_refs=entry.artifact_refs,
        content_parts=entry.content_parts,
        is_error=entry.is_error,
    )


def summary_text(summary: str) -> str:
    return SUMMARY_PREFIX + summary


def summary_message(summary: str) -> chat_pb2.ChatMessage:
    return chat_pb2.ChatMessage(role=chat_pb2.CHAT_ROLE_SYSTEM, content=summary_text(summary))
