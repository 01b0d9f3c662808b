"""Images and documents attached to entries are budgeted by the thread model's provider rule."""

from __future__ import annotations

import pytest

from pioneer_grpc.history import tokens
from pioneer_grpc.history.render import entry_counted_texts
from pioneer_grpc.v1 import chat_pb2, common_pb2, history_pb2
from pioneer_grpc.v1 import history_service_pb2 as pb
from tests.history.rpc import config, create, entry, load, turn

PHOTO = common_pb2.ArtifactRef(
    artifact_id="photo",
    display_name="photo.png",
    kind="image",
    mime_type="image/png",
    width_px=1024,
    height_px=1024,
)
REPORT = common_pb2.ArtifactRef(
    artifact_id="report", display_name="q3.pdf", kind="document", mime_type="application/pdf", page_count=3
)


def _text_cost(e: history_pb2.ConversationEntry, tokenizer: str) -> int:
    return sum(tokens.count_blocking(entry_counted_texts(e), tokenizer)) + tokens.MESSAGE_OVERHEAD


@pytest.mark.parametrize(
    ("model", "tokenizer", "attached"),
    [
        # 1024 x 1024 -> 768 x 768: 2 x 2 tiles, 85 + 4 * 170; a PDF page is 3,000.
        ("gpt-4o", "o200k_base", 85 + 4 * 170 + 3 * 3_000),
        # 1,048,576 px is under 1.2 MP and 1568 px: / 750 = 1398.1, rounded up; 3,000 a page.
        ("claude-sonnet-4-5", "claude_estimate", 1_399 + 3 * 3_000),
        # 2 x 2 tiles of 768 px at 258, and 258 a page.
        ("gemini-2.5-flash", "gemini_estimate", 4 * 258 + 3 * 258),
    ],
)
async def test_images_and_pdfs_are_budgeted_by_the_provider_rule(pg_server, model, tokenizer, attached):
    history = await pg_server.client()
    await create(history, "t", config(model=model))
    asked = entry(
        "u1", "turn-1", content="What does the chart on page 2 show?", artifact_refs=[PHOTO, REPORT]
    )
    answer = entry("a1", "turn-1", history_pb2.ENTRY_ROLE_ASSISTANT, content="Revenue doubled.")
    await turn(history, "t", "turn-1", asked, answer)
    report = (await load(history, "t")).report
    assert report.tokenizer == tokenizer
    assert report.tokens_before == _text_cost(asked, tokenizer) + _text_cost(answer, tokenizer) + attached
    assert [d.code for d in report.diagnostics] == []
    # The stored entry keeps its text count; the attachments are the budget's.
    listed = await history.list_entries(pb.ListEntriesRequest(thread_id="t"))
    assert listed.entries[0].token_count == _text_cost(asked, tokenizer) - tokens.MESSAGE_OVERHEAD


async def test_missing_sizes_fall_back_to_a_stated_default_with_a_diagnostic(pg_server):
    history = await pg_server.client()
    await create(history, "t", config(model="claude-opus-4-1"))
    shot = common_pb2.ArtifactRef(
        artifact_id="shot", display_name="s.jpg", kind="image", mime_type="image/jpeg"
    )
    scan = common_pb2.ArtifactRef(
        artifact_id="scan", display_name="scan.pdf", mime_type="application/pdf", size_bytes=250_000
    )
    asked = entry("u1", "turn-1", content="Compare these.", artifact_refs=[shot, scan])
    await turn(history, "t", "turn-1", asked)
    report = (await load(history, "t")).report
    # 2048 x 2048 assumed: scaled by sqrt(1.2e6 / 2048^2) = 0.5349 to 1095 x 1095 = 1,199,025 px,
    # / 750 = 1598.7 -> 1,599; 250,000 bytes at 100 KiB a page -> 3 pages of 3,000.
    assert report.tokens_before == _text_cost(asked, "claude_estimate") + 1_599 + 9_000
    assumed = [d for d in report.diagnostics if d.code == "attachment_size_assumed"]
    assert [(d.entry_id, "'shot'" in d.message, "'scan'" in d.message) for d in assumed] == [
        ("u1", True, False),
        ("u1", False, True),
    ]
    assert "2048 x 2048" in assumed[0].message
    assert "3 from size_bytes" in assumed[1].message


async def test_the_same_images_cost_what_each_model_counts(pg_server):
    """A thread moved from GPT-4o to GPT-4o mini budgets the same image by the new model's constants."""
    history = await pg_server.client()
    await create(history, "t", config(model="gpt-4o"))
    asked = entry("u1", "turn-1", content="Look.", artifact_refs=[PHOTO])
    await turn(history, "t", "turn-1", asked)
    before = (await load(history, "t")).report.tokens_before
    await history.update_thread(pb.UpdateThreadRequest(thread_id="t", config=config(model="gpt-4o-mini")))
    after = (await load(history, "t")).report.tokens_before
    assert (before, after) == (
        _text_cost(asked, "o200k_base") + 765,
        _text_cost(asked, "o200k_base") + 2_833 + 4 * 5_667,
    )


async def test_count_tokens_adds_sized_attachments(server):
    history = await server.client()
    unsized = common_pb2.ArtifactRef()
    unsized.CopyFrom(PHOTO)
    unsized.ClearField("width_px")
    unsized.ClearField("height_px")

    def message(ref: common_pb2.ArtifactRef) -> chat_pb2.ChatMessage:
        return chat_pb2.ChatMessage(
            role=chat_pb2.CHAT_ROLE_USER, content="See the photo.", artifact_refs=[ref]
        )

    for model, image in (("gemini-2.5-pro", 4 * 258), ("claude-sonnet-4-5", 1_399), ("gpt-4o", 765)):
        reply = await history.count_tokens(
            pb.CountTokensRequest(messages=[message(PHOTO), message(unsized)], model=model)
        )
        # The sized ref adds its image; the same ref without sizes adds nothing here.
        assert reply.token_counts[0] == reply.token_counts[1] + image, model


async def test_a_cleared_screenshot_result_still_costs_its_image(pg_server):
    """A placeholder keeps its result's artifact refs: clearing saves the text, not the image."""
    history = await pg_server.client()
    cfg = config(12_000, 2_000, model="claude-sonnet-4-5", keep_tool_results=0)
    cfg.clear_at_least_percent = 20  # clearing the one screenshot result is worth its cache break here
    await create(history, "t", cfg)
    shot = common_pb2.ArtifactRef(
        artifact_id="shot-0",
        display_name="screen.png",
        kind="image",
        mime_type="image/png",
        width_px=1000,
        height_px=750,
    )
    call = common_pb2.ToolCall(id="call-0", name="screenshot", arguments="{}")
    await turn(
        history,
        "t",
        "turn-0",
        entry("u0", "turn-0", content="Take a screenshot and describe the page."),
        entry("a0", "turn-0", history_pb2.ENTRY_ROLE_ASSISTANT, content="Taking it.", tool_calls=[call]),
        entry(
            "r0",
            "turn-0",
            history_pb2.ENTRY_ROLE_TOOL,
            content="pixel dump " * 1_000,
            tool_call_id="call-0",
            name="screenshot",
            artifact_refs=[shot],
        ),
    )
    for i in range(1, 4):
        await turn(history, "t", f"turn-{i}", entry(f"u{i}", f"turn-{i}", content="more words here " * 600))
    report = (await load(history, "t")).report
    [cleared] = report.cleared_tool_results
    placeholder = history_pb2.ConversationEntry(
        entry_id="r0",
        role=history_pb2.ENTRY_ROLE_TOOL,
        tool_call_id="call-0",
        name="screenshot",
        artifact_refs=[shot],
        content=(
            f"[Result cleared to save context: {cleared.tokens_before} tokens of screenshot output "
            "(call call-0). Call screenshot again with the same arguments to see it.]"
        ),
    )
    # 1000 x 750 px is 1,000 tokens for Claude, before and after clearing.
    assert (
        cleared.tokens_after
        == sum(tokens.count_blocking(entry_counted_texts(placeholder), "claude_estimate")) + 1_000
    )
    assert cleared.tokens_before > cleared.tokens_after + 1_000


async def test_a_cut_entry_leaves_room_for_its_image(pg_server):
    """Truncation cuts the text of an entry too large for the budget, never the image it attaches."""
    history = await pg_server.client()
    truncate = history_pb2.COMPACTION_STRATEGY_TRUNCATE
    await create(history, "t", config(3_000, 1_000, model="claude-sonnet-4-5", compaction_strategy=truncate))
    shot = common_pb2.ArtifactRef(
        artifact_id="shot",
        display_name="s.png",
        kind="image",
        mime_type="image/png",
        width_px=1000,
        height_px=750,
    )
    await turn(
        history, "t", "turn-0", entry("u0", "turn-0", content="plain words " * 2_000, artifact_refs=[shot])
    )
    response = await load(history, "t")
    assert [d.code for d in response.report.diagnostics] == ["entry_truncated"]
    [message] = response.messages
    [text_tokens] = tokens.count_blocking([message.content], "claude_estimate")
    # Budget 2,000: the image's 1,000 (1000 x 750 / 750) and the overhead leave under 1,000 for the text.
    assert response.report.tokens_after <= 2_000
    assert text_tokens + 1_000 + tokens.MESSAGE_OVERHEAD <= 2_000 + 50, text_tokens
