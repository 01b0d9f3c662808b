"""Tokens of the images and documents that artifact refs attach, by each provider's published rule.

An entry's refs travel to the model as one metadata line each (pioneer_grpc.artifacts),
and the agent loop attaches the image or PDF itself when it sends the round; the
budget reserves what that attachment costs, from the sizes in the ref.

The rules, as each provider publishes them (checked 2026-11-30):

- Anthropic, images (platform.claude.com/docs/en/build-with-claude/vision, "Evaluate
  image size" and "Calculate image costs"): an image whose long edge is over 1568 px,
  or that would cost more than about 1,600 tokens (1.2 megapixels; the docs advise at
  most 1.15), is first scaled down, keeping its aspect ratio, until it fits both; it then
  costs width * height / 750 tokens.
- Anthropic, PDFs (.../build-with-claude/pdf-support, "Estimate your costs"): each page is
  its extracted text, 1,500 to 3,000 tokens by the docs, plus an image of the page;
  counted as 3,000 a page, the top of that range (measured pages of text and image
  together come to about 2,100 to 2,500).
- OpenAI, images (platform.openai.com/docs/guides/images-vision, "Calculating costs"):
  * tile models: `detail: low` costs the model's base tokens; high (and auto) scales the
    image to fit 2048 x 2048, then its shortest side down to 768 px, and costs the base
    plus the model's tile tokens for each 512 px square that covers it (85 + 170 a tile
    for GPT-4o and GPT-4.1, 2,833 + 5,667 for GPT-4o mini, 75 + 150 for o1 and o3,
    70 + 140 for GPT-5: registry.toml [images]);
  * patch models (GPT-4.1 mini and nano, GPT-5 mini and nano, o4-mini): the 32 x 32 px
    patches that cover the image; over 1,536 patches the image is scaled down to fit
    1,536 (then to whole patches); the patches (at most 1,536) times the model's
    multiplier (1.62, 2.46, 1.72). Detail does not change the count.
- OpenAI, PDFs (.../guides/pdf-files): the text and an image of each page, with no
  published count per page: counted as 3,000 a page, as Anthropic's.
- Gemini (ai.google.dev/gemini-api/docs/tokens and /document-processing): an image with
  both sides at most 384 px costs 258 tokens; a larger one is cropped and scaled into
  768 x 768 tiles of 258 tokens each; a document page costs 258 tokens.

A ref without the sizes its rule needs is counted with a stated default and named in
`assumed`, which a history load reports as `attachment_size_assumed`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

from pioneer_grpc.v1 import common_pb2

CHECKED = "2026-11-30"

ANTHROPIC = "anthropic"
OPENAI_TILES = "openai_tiles"
OPENAI_PATCHES = "openai_patches"
GEMINI = "gemini"
RULES = (ANTHROPIC, OPENAI_TILES, OPENAI_PATCHES, GEMINI)

ANTHROPIC_MAX_EDGE = 1568
ANTHROPIC_PIXELS_PER_TOKEN = 750
ANTHROPIC_MAX_PIXELS = 1_600 * ANTHROPIC_PIXELS_PER_TOKEN
PDF_PAGE_TOKENS = 3_000

OPENAI_FIT = 2048
OPENAI_SHORT_SIDE = 768
OPENAI_TILE = 512
OPENAI_PATCH = 32
OPENAI_MAX_PATCHES = 1536

GEMINI_SMALL_SIDE = 384
GEMINI_TILE = 768
GEMINI_TILE_TOKENS = 258
GEMINI_PAGE_TOKENS = 258

# What a ref without its sizes is taken to be.
DEFAULT_IMAGE_SIDE = 2048
BYTES_PER_ASSUMED_PAGE = 100 * 1024


@dataclass(frozen=True)
class ImageRule:
    kind: str
    # OpenAI tile models: tokens of low detail, and added to every high-detail count.
    base_tokens: int = 85
    # OpenAI tile models: tokens of each 512 px tile.
    tile_tokens: int = 170
    # OpenAI patch models: tokens per patch.
    patch_multiplier: float = 1.0


def _scaled(width: int, height: int, scale: float) -> tuple[int, int]:
    return max(1, int(width * scale)), max(1, int(height * scale))


def _anthropic_image(width: int, height: int) -> int:
    scale = min(
        1.0, ANTHROPIC_MAX_EDGE / max(width, height), math.sqrt(ANTHROPIC_MAX_PIXELS / (width * height))
    )
    if scale < 1.0:
        width, height = _scaled(width, height, scale)
    return math.ceil(width * height / ANTHROPIC_PIXELS_PER_TOKEN)


def _openai_tiles(rule: ImageRule, width: int, height: int, detail: int) -> int:
    if detail == common_pb2.IMAGE_DETAIL_LOW:
        return rule.base_tokens
    if max(width, height) > OPENAI_FIT:
        width, height = _scaled(width, height, OPENAI_FIT / max(width, height))
    if min(width, height) > OPENAI_SHORT_SIDE:
        width, height = _scaled(width, height, OPENAI_SHORT_SIDE / min(width, height))
    tiles = math.ceil(width / OPENAI_TILE) * math.ceil(height / OPENAI_TILE)
    return rule.base_tokens + rule.tile_tokens * tiles


def _patches(width: int, height: int) -> int:
    return math.ceil(width / OPENAI_PATCH) * math.ceil(height / OPENAI_PATCH)


def _openai_patches(rule: ImageRule, width: int, height: int) -> int:
    if _patches(width, height) > OPENAI_MAX_PATCHES:
        width, height = _scaled(
            width, height, math.sqrt(OPENAI_MAX_PATCHES * OPENAI_PATCH**2 / (width * height))
        )
        # Then down to whole patches along the side that needs it most.
        whole = min(
            math.floor(width / OPENAI_PATCH) / (width / OPENAI_PATCH),
            math.floor(height / OPENAI_PATCH) / (height / OPENAI_PATCH),
        )
        width, height = _scaled(width, height, whole)
    patches = min(_patches(width, height), OPENAI_MAX_PATCHES)
    return round(patches * rule.patch_multiplier)


def _gemini_image(width: int, height: int) -> int:
    if width <= GEMINI_SMALL_SIDE and height <= GEMINI_SMALL_SIDE:
        return GEMINI_TILE_TOKENS
    return math.ceil(width / GEMINI_TILE) * math.ceil(height / GEMINI_TILE) * GEMINI_TILE_TOKENS


def image_tokens(rule: ImageRule, width: int, height: int, detail: int = 0) -> int:
    """Tokens of one image of `width` x `height` px (both positive) under `rule`."""
    if rule.kind == ANTHROPIC:
        return _anthropic_image(width, height)
    if rule.kind == OPENAI_PATCHES:
        return _openai_patches(rule, width, height)
    if rule.kind == GEMINI:
        return _gemini_image(width, height)
    return _openai_tiles(rule, width, height, detail)


def document_tokens(rule: ImageRule, pages: int) -> int:
    return pages * (GEMINI_PAGE_TOKENS if rule.kind == GEMINI else PDF_PAGE_TOKENS)


def attached_kind(ref: common_pb2.ArtifactRef) -> str | None:
    """ "image", "document" (a PDF), or None for a ref that attaches nothing counted (metadata only)."""
    mime = ref.mime_type.strip().lower() if ref.HasField("mime_type") else ""
    kind = ref.kind.strip().lower()
    if mime.startswith("image/") or (not mime and kind == "image"):
        return "image"
    if mime == "application/pdf" or (not mime and kind in ("document", "pdf")):
        return "document"
    return None


@dataclass(frozen=True)
class AttachmentCount:
    tokens: int
    # One line per ref counted with a default size: what was missing and what was assumed.
    assumed: tuple[str, ...] = ()


def _image(rule: ImageRule, ref: common_pb2.ArtifactRef) -> tuple[int, str | None]:
    if ref.width_px > 0 and ref.height_px > 0:
        return image_tokens(rule, ref.width_px, ref.height_px, ref.detail), None
    side = DEFAULT_IMAGE_SIDE
    tokens = image_tokens(rule, side, side, ref.detail)
    return tokens, (
        f"artifact {ref.artifact_id!r} is an image without width_px and height_px: "
        f"counted as {side} x {side} px ({tokens} tokens)"
    )


def _document(rule: ImageRule, ref: common_pb2.ArtifactRef) -> tuple[int, str | None]:
    if ref.page_count > 0:
        return document_tokens(rule, ref.page_count), None
    pages = max(1, math.ceil(ref.size_bytes / BYTES_PER_ASSUMED_PAGE))
    tokens = document_tokens(rule, pages)
    source = (
        f"{pages} from size_bytes (one per 100 KiB)" if ref.size_bytes > 0 else "1 (no size_bytes either)"
    )
    return tokens, (
        f"artifact {ref.artifact_id!r} is a document without page_count: pages taken as {source} "
        f"({tokens} tokens)"
    )


def _sized(ref: common_pb2.ArtifactRef, kind: str) -> bool:
    return ref.width_px > 0 and ref.height_px > 0 if kind == "image" else ref.page_count > 0


def attachment_tokens(
    rule: ImageRule, refs: Iterable[common_pb2.ArtifactRef], *, sized_only: bool = False
) -> AttachmentCount:
    """Tokens of the images and documents `refs` attach, each (artifact_id, version_id) once.

    `sized_only` leaves out refs without the sizes their rule needs (instead of assuming them).
    """
    total = 0
    assumed: list[str] = []
    seen: set[tuple[str, str | None]] = set()
    for ref in refs:
        key = (ref.artifact_id, ref.version_id if ref.HasField("version_id") else None)
        kind = attached_kind(ref)
        if kind is None or key in seen or (sized_only and not _sized(ref, kind)):
            continue
        seen.add(key)
        tokens, note = _image(rule, ref) if kind == "image" else _document(rule, ref)
        total += tokens
        if note is not None:
            assumed.append(note)
    return AttachmentCount(total, tuple(assumed))
