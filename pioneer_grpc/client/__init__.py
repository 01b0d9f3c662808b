"""Python client of pioneer-grpc: sync (Client) and asyncio (AsyncClient), one method per RPC.

    from pioneer_grpc.client import Client, ThreadConfig
    with Client.connect("127.0.0.1:50051", token="...") as client:
        client.create_thread(thread_id="t1", config=ThreadConfig(model="gpt-4.1"))

Roles: EntryRole (history_pb2, ENTRY_ROLE_*) is the author of a stored entry, what
append_entries and prepare_turn's new_entries take; ChatRole (chat_pb2, CHAT_ROLE_*) is
the author of a ChatMessage, what load_conversation_history and prepare_turn return and
render_chat_request takes. They number the same roles differently: convert with
chat_role() / entry_role(), print with role_name().

A provider's response becomes the entries to append, its usage and why the model
stopped with entries_of_response(provider, response_json, turn_id, round_number).

Needs only grpcio, protobuf and googleapis-common-protos: it is shipped alone as
the `pioneer-grpc-client` distribution (clients/python), without the server.
"""

from pioneer_grpc import reasons
from pioneer_grpc.client.aio import AsyncClient
from pioneer_grpc.client.connect import DEFAULT_ADDRESS, DEFAULT_MAX_MESSAGE_BYTES, ConnectOptions
from pioneer_grpc.client.errors import (
    AbortedError,
    AlreadyExistsError,
    DeadlineExceededError,
    EntryConflict,
    FailedPreconditionError,
    FieldViolation,
    InternalError,
    InvalidArgumentError,
    NotFoundError,
    PermissionDeniedError,
    ResourceExhaustedError,
    RpcFailure,
    ThreadConflict,
    ThreadExists,
    ThreadNotFound,
    TurnCompleted,
    TurnNotCompleted,
    TurnNotFound,
    UnauthenticatedError,
    UnavailableError,
    UnimplementedError,
    UnsupportedExportVersion,
    WorkspaceOutsideHome,
)
from pioneer_grpc.client.helpers import (
    assistant_entry,
    chat_role,
    entries_of_reply,
    entry_role,
    event_ref,
    image_part,
    inline_ref,
    json_struct,
    role_name,
    tool,
    tool_result_entry,
    tool_round,
    turn_ref,
    user_entry,
)
from pioneer_grpc.client.methods import RPCS
from pioneer_grpc.client.replies import (
    STOP_CONTENT_FILTER,
    STOP_CONTEXT_WINDOW_EXCEEDED,
    STOP_END_TURN,
    STOP_MAX_TOKENS,
    STOP_OTHER,
    STOP_PAUSE_TURN,
    STOP_REFUSAL,
    STOP_STOP_SEQUENCE,
    STOP_TOOL_USE,
    ProviderReply,
    entries_of_response,
)
from pioneer_grpc.client.reply_json import ReplyError
from pioneer_grpc.client.sync import Client
from pioneer_grpc.v1.chat_pb2 import ChatMessage, ChatRequest, ToolChoice, ToolDefinition
from pioneer_grpc.v1.common_pb2 import ToolCall
from pioneer_grpc.v1.history_pb2 import ConversationEntry, ThreadConfig
from pioneer_grpc.v1.prompt_pb2 import PromptCompileInput
from pioneer_grpc.v1.provider_service_pb2 import Provider
from pioneer_grpc.v1.usage_pb2 import ProviderUsage

__all__ = [
    "DEFAULT_ADDRESS",
    "DEFAULT_MAX_MESSAGE_BYTES",
    "RPCS",
    "STOP_CONTENT_FILTER",
    "STOP_CONTEXT_WINDOW_EXCEEDED",
    "STOP_END_TURN",
    "STOP_MAX_TOKENS",
    "STOP_OTHER",
    "STOP_PAUSE_TURN",
    "STOP_REFUSAL",
    "STOP_STOP_SEQUENCE",
    "STOP_TOOL_USE",
    "AbortedError",
    "AlreadyExistsError",
    "AsyncClient",
    "ChatMessage",
    "ChatRequest",
    "Client",
    "ConnectOptions",
    "ConversationEntry",
    "DeadlineExceededError",
    "EntryConflict",
    "FailedPreconditionError",
    "FieldViolation",
    "InternalError",
    "InvalidArgumentError",
    "NotFoundError",
    "PermissionDeniedError",
    "PromptCompileInput",
    "Provider",
    "ProviderReply",
    "ProviderUsage",
    "ReplyError",
    "ResourceExhaustedError",
    "RpcFailure",
    "ThreadConfig",
    "ThreadConflict",
    "ThreadExists",
    "ThreadNotFound",
    "ToolCall",
    "ToolChoice",
    "ToolDefinition",
    "TurnCompleted",
    "TurnNotCompleted",
    "TurnNotFound",
    "UnauthenticatedError",
    "UnavailableError",
    "UnimplementedError",
    "UnsupportedExportVersion",
    "WorkspaceOutsideHome",
    "assistant_entry",
    "chat_role",
    "entries_of_reply",
    "entries_of_response",
    "entry_role",
    "event_ref",
    "image_part",
    "inline_ref",
    "json_struct",
    "reasons",
    "role_name",
    "tool",
    "tool_result_entry",
    "tool_round",
    "turn_ref",
    "user_entry",
]
