"""The requests every provider renders: one set, so the golden bodies line up side by side."""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Callable, Iterator, Mapping

from google.protobuf import json_format

from pioneer_grpc.providers.specs import SPECS
from pioneer_grpc.v1 import chat_pb2, prompt_pb2, provider_service_pb2

P = provider_service_pb2
MARKER = "\n<!-- PIONEER_PROMT_CACHE_BOUNDARY -->\n"
MARKER_CORE = MARKER.strip()

# Every registered provider, by its CLI name (providers/specs.py): a provider is in every matrix
# built from these by being registered.
PROVIDERS: dict[str, int] = {spec.name: provider for provider, spec in SPECS.items()}


class _CaseModels(Mapping[int, str]):
    """The model each provider renders the cases for: its Conformance's `case_model` (read when
    first asked, as the conformance modules import this one)."""

    def __getitem__(self, provider: int) -> str:
        from tests.providers.conformance import conformances

        return conformances()[provider].case_model

    def __iter__(self) -> Iterator[int]:
        return iter(SPECS)

    def __len__(self) -> int:
        return len(SPECS)


MODELS: Mapping[int, str] = _CaseModels()


def rendered_cases() -> list[tuple[str, str]]:
    """(case, provider name) for every registered provider and every case it renders."""
    return [
        (case, name) for name, provider in PROVIDERS.items() for case in CASES if not refused(case, provider)
    ]


def refused(case: str, provider: int) -> bool:
    """Whether `provider` refuses `case` (its Conformance says so; its golden file holds the refusal)."""
    from tests.providers.conformance import conformances

    return case in conformances()[provider].refused_cases


# A 1x1 transparent PNG.
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
)
PDF = b"%PDF-1.4\n1 0 obj<<>>endobj\ntrailer<<>>\n%%EOF\n"

STABLE_SECTIONS = [
    ("Identity", "You are Pioneer, a careful assistant working inside the user's workspace."),
    (
        "Safety",
        "- Never send private data anywhere the user did not ask for.\n"
        "- Take no destructive action without explicit intent.\n"
        "- When constraints conflict, ask.",
    ),
    (
        "Soul Core",
        "### SOUL.md (/home/u/.pioneer/SOUL.md)\n"
        + "\n".join(
            f"- Core truth {i}: be direct, check your work, and say what you did not verify."
            for i in range(48)
        )
        + "\nThis file is yours to evolve. As you learn who you are, update it.",
    ),
    ("Tool Recovery Policy", "When a tool call fails, diagnose the error and retry with a corrected call."),
]


def stable_text() -> str:
    return "\n\n".join(f"## {title}\n{content}" for title, content in STABLE_SECTIONS)


def compiled(dynamic: str, stable: str | None = None) -> prompt_pb2.CompiledPromptPayload:
    stable = stable_text() if stable is None else stable
    full = f"{stable}{MARKER}{dynamic}" if dynamic else stable
    return prompt_pb2.CompiledPromptPayload(
        stable_system_text=stable,
        dynamic_system_text=dynamic,
        full_system_text=full,
        boundary_marker=MARKER,
        manifest=prompt_pb2.PromptManifest(
            fingerprint_stable=hashlib.sha256(stable.encode()).hexdigest(),
            fingerprint_dynamic=hashlib.sha256(dynamic.encode()).hexdigest(),
            fingerprint_full=hashlib.sha256(full.encode()).hexdigest(),
        ),
    )


def dynamic_text(now: str = "2025-06-01 10:00 UTC") -> str:
    return (
        "## Memory Recall\n- user preference: answers in British English\n\n"
        f"## Extra System\nLocal time: {now}; OS: linux"
    )


def _user(text: str, **extra: object) -> dict[str, object]:
    return {"role": "CHAT_ROLE_USER", "content": text, **extra}


def _assistant(text: str, **extra: object) -> dict[str, object]:
    return {"role": "CHAT_ROLE_ASSISTANT", "content": text, **extra}


WEATHER = {
    "name": "get_weather",
    "description": "Current weather for a city.",
    "parameters": {
        "type": "object",
        "properties": {
            "city": {"type": "string", "description": "City name, e.g. Lisbon"},
            "days": {"type": "integer", "minimum": 1, "maximum": 7},
        },
        "required": ["city"],
    },
}
LIST_FILES = {"name": "list_files", "description": "List the workspace root."}  # no parameters


def _request(
    d: dict[str, object], compiled_prompt: prompt_pb2.CompiledPromptPayload | None = None
) -> chat_pb2.ChatRequest:
    request = json_format.ParseDict(d, chat_pb2.ChatRequest())
    if compiled_prompt is not None:
        request.compiled_prompt.CopyFrom(compiled_prompt)
    return request


def plain() -> chat_pb2.ChatRequest:
    return _request({"messages": [_user("What is the capital of Portugal?")]})


def plain_compiled() -> chat_pb2.ChatRequest:
    return _request(
        {
            "messages": [
                {
                    "role": "CHAT_ROLE_SYSTEM",
                    "content": "Summary of earlier conversation:\nThe user plans a trip.",
                },
                _user("What is the capital of Portugal?"),
                _assistant("Lisbon."),
                _user("And its population?"),
            ],
            "temperature": 0.2,
            "maxTokens": 1024,
        },
        compiled(dynamic_text()),
    )


def _tools(choice: dict[str, object], parallel: bool | None = None) -> chat_pb2.ChatRequest:
    d: dict[str, object] = {
        "messages": [_user("Will it rain in Lisbon tomorrow?")],
        "tools": [WEATHER, LIST_FILES],
        "toolChoice": choice,
    }
    if parallel is not None:
        d["parallelToolCalls"] = parallel
    return _request(d, compiled(dynamic_text()))


def tools_auto() -> chat_pb2.ChatRequest:
    return _tools({"mode": "TOOL_CHOICE_MODE_AUTO"}, parallel=True)


def tools_none() -> chat_pb2.ChatRequest:
    return _tools({"mode": "TOOL_CHOICE_MODE_NONE"})


def tools_required() -> chat_pb2.ChatRequest:
    return _tools({"mode": "TOOL_CHOICE_MODE_REQUIRED"}, parallel=False)


def tools_named() -> chat_pb2.ChatRequest:
    return _tools({"mode": "TOOL_CHOICE_MODE_TOOL", "toolName": "get_weather"}, parallel=False)


def tools_parallel_off() -> chat_pb2.ChatRequest:
    return _tools({}, parallel=False)


def tool_round_trip() -> chat_pb2.ChatRequest:
    return _request(
        {
            "messages": [
                _user("Weather in Lisbon and Porto, and what files do I have?"),
                _assistant(
                    "Checking both cities and your files.",
                    toolCalls=[
                        {"id": "call_1", "name": "get_weather", "arguments": '{"city":"Lisbon","days":1}'},
                        {"id": "call_2", "name": "get_weather", "arguments": '{"city": "Porto"}'},
                    ],
                ),
                {
                    "role": "CHAT_ROLE_TOOL",
                    "toolCallId": "call_1",
                    "name": "get_weather",
                    "content": "18°C, sunny",
                },
                # No name: the call it answers supplies it where a provider needs one.
                {
                    "role": "CHAT_ROLE_TOOL",
                    "toolCallId": "call_2",
                    "content": '{"temp_c": 15, "sky": "cloudy"}',
                },
                _assistant("", toolCalls=[{"id": "call_3", "name": "list_files", "arguments": ""}]),
                {"role": "CHAT_ROLE_TOOL", "toolCallId": "call_3", "name": "list_files", "content": ""},
                _assistant("Lisbon 18°C and sunny, Porto 15°C and cloudy; the workspace is empty."),
                _user("Thanks!"),
            ],
            "tools": [WEATHER, LIST_FILES],
            "toolChoice": {"mode": "TOOL_CHOICE_MODE_AUTO"},
        },
        compiled(dynamic_text()),
    )


def images() -> chat_pb2.ChatRequest:
    request = _request(
        {
            "messages": [
                _user(
                    "What is in these?",
                    contentParts=[
                        {"image": {"mimeType": "image/png", "uri": "https://example.com/cat.png"}},
                        {"text": "and this one:"},
                        {"image": {"mimeType": "image/png", "data": base64.b64encode(PNG).decode()}},
                        {
                            "file": {
                                "mimeType": "application/pdf",
                                "filename": "report.pdf",
                                "data": base64.b64encode(PDF).decode(),
                            }
                        },
                    ],
                    artifactRefs=[
                        {
                            "artifactId": "art_1",
                            "versionId": "v3",
                            "displayName": 'holiday "best".png',
                            "kind": "image",
                            "mimeType": "image/png",
                            "sizeBytes": 862208,
                            "role": "user",
                        },
                        {"artifactId": "art_2", "displayName": "notes.txt", "kind": "file"},
                        {"artifactId": "art_1", "versionId": "v3", "displayName": "dup", "kind": "image"},
                    ],
                ),
                _assistant(
                    "A cat, a blank square and a one-page PDF.",
                    artifactRefs=[
                        {
                            "artifactId": "art_9",
                            "versionId": "v1",
                            "displayName": "summary.md",
                            "kind": "document",
                            "sizeBytes": 1572864,
                            "role": "assistant",
                        }
                    ],
                ),
                _user("Describe the cat."),
            ],
        }
    )
    return request


def reasoning_effort() -> chat_pb2.ChatRequest:
    return _request(
        {
            "messages": [_user("Prove that sqrt(2) is irrational.")],
            "reasoning": {"effort": "REASONING_EFFORT_HIGH"},
        },
        compiled(dynamic_text()),
    )


def reasoning_budget() -> chat_pb2.ChatRequest:
    return _request(
        {
            "messages": [_user("Prove that sqrt(2) is irrational.")],
            "reasoning": {"effort": "REASONING_EFFORT_MEDIUM", "budgetTokens": 3000},
            "maxTokens": 8000,
        }
    )


def reasoning_disabled() -> chat_pb2.ChatRequest:
    return _request({"messages": [_user("Say hi.")], "reasoning": {"disabled": True}})


SCREENSHOT = {
    "name": "screenshot",
    "description": "A screenshot of the browser tab.",
    "parameters": {"type": "object", "properties": {"tab": {"type": "integer"}}},
}


def tool_result_media() -> chat_pb2.ChatRequest:
    """A browser agent's round: a screenshot and a PDF in tool results, one marked as an error."""
    png = base64.b64encode(PNG).decode()
    return _request(
        {
            "messages": [
                _user("Open the invoice and tell me the total."),
                _assistant(
                    "",
                    toolCalls=[
                        {"id": "call_0", "name": "screenshot", "arguments": '{"tab":1}'},
                        {"id": "call_1", "name": "screenshot", "arguments": '{"tab":2}'},
                    ],
                ),
                {
                    "role": "CHAT_ROLE_TOOL",
                    "toolCallId": "call_0",
                    "content": "Tab 1:",
                    "contentParts": [
                        {"image": {"mimeType": "image/png", "data": png}},
                        {
                            "file": {
                                "mimeType": "application/pdf",
                                "filename": "invoice.pdf",
                                "data": base64.b64encode(PDF).decode(),
                            }
                        },
                    ],
                },
                {"role": "CHAT_ROLE_TOOL", "toolCallId": "call_1", "content": "no tab 2", "isError": True},
                _assistant("The invoice is open.", toolCalls=[]),
                _user("And now?"),
                # Ids as a model numbering its calls issues them: call_0 again.
                _assistant("", toolCalls=[{"id": "call_0", "name": "screenshot", "arguments": '{"tab":1}'}]),
                {
                    "role": "CHAT_ROLE_TOOL",
                    "toolCallId": "call_0",
                    "contentParts": [
                        {"image": {"mimeType": "image/png", "uri": "https://example.com/s.png"}}
                    ],
                },
            ],
            "tools": [SCREENSHOT],
        }
    )


def short_stable() -> chat_pb2.ChatRequest:
    """A stable half below the Anthropic minimum: no breakpoint on it."""
    return _request(
        {"messages": [_user("Hi")]}, compiled(dynamic_text(), stable="## Identity\nYou are Pioneer.")
    )


CASES: dict[str, Callable[[], chat_pb2.ChatRequest]] = {
    "plain": plain,
    "plain_compiled": plain_compiled,
    "tools_auto": tools_auto,
    "tools_none": tools_none,
    "tools_required": tools_required,
    "tools_named": tools_named,
    "tools_parallel_off": tools_parallel_off,
    "tool_round_trip": tool_round_trip,
    "images": images,
    "reasoning_effort": reasoning_effort,
    "reasoning_budget": reasoning_budget,
    "reasoning_disabled": reasoning_disabled,
    "short_stable": short_stable,
    "tool_result_media": tool_result_media,
}


def build(case: str, provider: int) -> chat_pb2.ChatRequest:
    request = CASES[case]()
    request.model = MODELS[provider]
    return request
