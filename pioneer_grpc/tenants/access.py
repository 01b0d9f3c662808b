"""Every RPC of the contract, read or write: what a viewer may call.

A test walks the proto descriptors, so an RPC added to a .proto without a line
here fails it. A method not named here counts as a write.
"""

from __future__ import annotations

import enum


class Access(enum.Enum):
    READ = "read"
    WRITE = "write"


R, W = Access.READ, Access.WRITE

METHOD_ACCESS: dict[str, Access] = {
    "/pioneer.v1.EchoService/Echo": R,
    "/pioneer.v1.HistoryService/CreateThread": W,
    "/pioneer.v1.HistoryService/GetThread": R,
    "/pioneer.v1.HistoryService/UpdateThread": W,
    "/pioneer.v1.HistoryService/AppendEntries": W,
    "/pioneer.v1.HistoryService/CompleteTurn": W,
    "/pioneer.v1.HistoryService/AbandonTurn": W,
    "/pioneer.v1.HistoryService/DeleteThread": W,
    "/pioneer.v1.HistoryService/ForkThread": W,
    "/pioneer.v1.HistoryService/ExportThread": R,
    "/pioneer.v1.HistoryService/ImportThread": W,
    # Reads a thread; may write its summary back (compaction), which is the server's doing.
    "/pioneer.v1.HistoryService/LoadConversationHistory": R,
    "/pioneer.v1.HistoryService/GetThreadSummary": R,
    "/pioneer.v1.HistoryService/CountTokens": R,
    "/pioneer.v1.HistoryService/ListThreads": R,
    "/pioneer.v1.HistoryService/ListTurns": R,
    "/pioneer.v1.HistoryService/ListEntries": R,
    "/pioneer.v1.ManifestService/GetTurnManifest": R,
    "/pioneer.v1.ManifestService/WatchManifests": R,
    "/pioneer.v1.ManifestService/DiffManifests": R,
    "/pioneer.v1.ManifestService/ListRenderedRounds": R,
    "/pioneer.v1.ManifestService/ListRoundUsage": R,
    "/pioneer.v1.ManifestService/ListThreadTimeline": R,
    # Records the compile's manifest on its turn.
    "/pioneer.v1.PromptCompilerService/CompilePrompt": W,
    # Creates files in the runtime home.
    "/pioneer.v1.PromptCompilerService/EnsureBootstrapFiles": W,
    "/pioneer.v1.ProviderService/RenderChatRequest": R,
    # Appends, compiles and records a round.
    "/pioneer.v1.TurnService/PrepareTurn": W,
    "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo": R,
    "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo": R,
}


def access_of(method: str) -> Access:
    return METHOD_ACCESS.get(method, Access.WRITE)
