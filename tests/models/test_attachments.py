"""Each provider's image and document rule on sizes worked out by hand (models/attachments.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pioneer_grpc.models.attachments import (
    ANTHROPIC,
    GEMINI,
    OPENAI_PATCHES,
    OPENAI_TILES,
    ImageRule,
    attachment_tokens,
    document_tokens,
    image_tokens,
)
from pioneer_grpc.models.registry import RegistryError, load_registry, packaged_registry
from pioneer_grpc.v1 import common_pb2

HIGH, LOW = common_pb2.IMAGE_DETAIL_HIGH, common_pb2.IMAGE_DETAIL_LOW


@pytest.mark.parametrize(
    ("model", "width", "height", "detail", "tokens"),
    [
        # OpenAI's own examples: 1024 x 1024 -> 768 x 768, 2 x 2 tiles: 85 + 4 * 170.
        ("gpt-4o", 1024, 1024, HIGH, 765),
        # 2048 x 4096 -> 1024 x 2048 -> 768 x 1536, 2 x 3 tiles: 85 + 6 * 170.
        ("gpt-4o", 2048, 4096, HIGH, 1105),
        ("gpt-4o", 4096, 8192, LOW, 85),
        # "auto" (unspecified) counts as high.
        ("gpt-4.1", 1024, 1024, common_pb2.IMAGE_DETAIL_UNSPECIFIED, 765),
        # A small image is not scaled up: one 512 px tile.
        ("gpt-4o", 500, 300, HIGH, 85 + 170),
        # GPT-4o mini: the same tiles at 2,833 + 5,667 each.
        ("gpt-4o-mini", 1024, 1024, HIGH, 2_833 + 4 * 5_667),
        ("o3", 1024, 1024, HIGH, 75 + 4 * 150),
        ("gpt-5", 1024, 1024, HIGH, 70 + 4 * 140),
        # Patches: 1024 x 1024 is 32 x 32 = 1,024 patches, times 1.62 (1,658.88, rounded).
        ("gpt-4.1-mini", 1024, 1024, HIGH, 1_659),
        # OpenAI's example: 1800 x 2400 is scaled to 1056 x 1408, 33 x 44 = 1,452 patches.
        ("gpt-4.1-mini", 1800, 2400, HIGH, round(1_452 * 1.62)),
        ("o4-mini", 1800, 2400, LOW, round(1_452 * 1.72)),
        ("gpt-5-nano", 64, 64, HIGH, round(4 * 2.46)),
        # Claude: 1000 x 750 px is 750,000 / 750.
        ("claude-sonnet-4-5", 1000, 750, HIGH, 1_000),
        # Long edge 3136 > 1568: halved to 1568 x 392 = 614,656 px, / 750 = 819.5, rounded up.
        ("claude-haiku-4-5", 3136, 784, HIGH, 820),
        # Gemini: both sides at most 384 px is 258; 1024 x 1024 takes 2 x 2 tiles of 768.
        ("gemini-2.5-flash", 384, 200, HIGH, 258),
        ("gemini-2.5-pro", 1024, 1024, HIGH, 4 * 258),
        ("gemini-2.0-flash", 1600, 385, HIGH, 3 * 1 * 258),
    ],
)
def test_image_rules_by_model(model, width, height, detail, tokens):
    assert image_tokens(packaged_registry().image_rule(model), width, height, detail) == tokens


def test_claude_scales_a_large_image_to_about_1600_tokens():
    # 2000 x 2000 is within 8,000 but over 1.2 megapixels: scaled by sqrt(1.2e6 / 4e6) = 0.5477
    # to 1095 x 1095 = 1,199,025 px, / 750 = 1598.7.
    assert image_tokens(ImageRule(ANTHROPIC), 2000, 2000) == 1_599


def test_documents_count_per_page():
    assert document_tokens(ImageRule(ANTHROPIC), 3) == 9_000
    assert document_tokens(ImageRule(OPENAI_TILES), 2) == 6_000
    assert document_tokens(ImageRule(GEMINI), 3) == 774


def _ref(artifact_id: str, **fields) -> common_pb2.ArtifactRef:
    return common_pb2.ArtifactRef(artifact_id=artifact_id, display_name=artifact_id, **fields)


def test_refs_are_counted_once_and_only_images_and_pdfs():
    rule = ImageRule(GEMINI)
    refs = [
        _ref("img", kind="image", mime_type="image/png", width_px=300, height_px=300),
        _ref("img", kind="image", mime_type="image/png", width_px=300, height_px=300),  # listed twice
        _ref("pdf", kind="file", mime_type="application/pdf", page_count=2),
        _ref("notes", kind="document", mime_type="text/markdown", size_bytes=9_000),  # text: metadata only
        _ref("bare", kind="image", width_px=100, height_px=100),  # no mime: the kind says image
    ]
    assert attachment_tokens(rule, refs) == attachment_tokens(rule, refs[:1] + refs[2:])
    assert attachment_tokens(rule, refs).tokens == 258 + 2 * 258 + 258


def test_missing_sizes_are_assumed_and_named():
    rule = ImageRule(ANTHROPIC)
    counted = attachment_tokens(
        rule,
        [
            _ref("shot", kind="image", mime_type="image/jpeg"),
            _ref("report", kind="document", mime_type="application/pdf", size_bytes=250_000),
            _ref("memo", kind="pdf"),
        ],
    )
    # 2048 x 2048 assumed (1,599 for Claude), 3 pages from 250,000 bytes, 1 page without a size.
    assert counted.tokens == image_tokens(rule, 2048, 2048) + 3 * 3_000 + 3_000
    assert len(counted.assumed) == 3
    assert "'shot'" in counted.assumed[0]
    assert "2048 x 2048" in counted.assumed[0]
    assert "3 from size_bytes" in counted.assumed[1]
    sized = attachment_tokens(rule, [_ref("shot", kind="image", mime_type="image/jpeg")], sized_only=True)
    assert sized.tokens == 0
    assert sized.assumed == ()


def test_an_unknown_model_counts_images_as_gpt_4o():
    assert packaged_registry().image_rule("llama-3-70b") == ImageRule(OPENAI_TILES, 85, 170)


def test_an_operator_file_sets_image_rules(tmp_path: Path):
    path = tmp_path / "models.toml"
    path.write_text('[images."gpt-4o"]\nrule = "openai_patches"\npatch_multiplier = 2.0\n')
    assert load_registry(path).image_rule("gpt-4o-2024-08-06") == ImageRule(
        OPENAI_PATCHES, patch_multiplier=2.0
    )
    path.write_text('[images."gpt-4o"]\nrule = "openai_tiles"\nbase_tokens = 0\ntile_tokens = 1\n')
    with pytest.raises(RegistryError, match="base_tokens and tile_tokens"):
        load_registry(path)
