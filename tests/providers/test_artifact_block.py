"""The artifact block, in the original's format, and how each provider carries it."""

from __future__ import annotations

import pytest

from pioneer_grpc.artifacts import append_artifact_block, format_artifact_block, format_size, message_header
from pioneer_grpc.v1 import common_pb2

Ref = common_pb2.ArtifactRef


@pytest.mark.parametrize(
    ("size", "text"),
    [
        (0, "0 B"),
        (1023, "1023 B"),
        (1024, "1 KB"),
        (862_208, "842 KB"),
        (1024 * 1024 - 1, "1024 KB"),
        (1024 * 1024, "1.0 MB"),
        (1_572_864, "1.5 MB"),
        (3 * 1024**3 + 1024**3 // 4, "3.2 GB"),
    ],
)
def test_sizes(size: int, text: str) -> None:
    assert format_size(size) == text


def test_full_line_and_header() -> None:
    ref = Ref(
        artifact_id="a1",
        version_id="v2",
        display_name="photo.jpg",
        kind="image",
        mime_type="image/jpeg",
        size_bytes=862_208,
        role="user",
    )
    assert format_artifact_block(message_header("user"), [ref]) == (
        "Available artifacts from this user message:\n"
        '- artifactId=a1, versionId=v2, name="photo.jpg", kind=image, '
        "mime=image/jpeg, size=842 KB, role=user."
    )


def test_unknown_fields_are_left_out_and_version_is_null() -> None:
    block = format_artifact_block(
        message_header("assistant"), [Ref(artifact_id="a", display_name="n", kind="file")]
    )
    assert block.splitlines() == [
        "Available artifacts from this assistant message:",
        '- artifactId=a, versionId=null, name="n", kind=file.',
    ]


def test_names_are_escaped() -> None:
    block = format_artifact_block("H", [Ref(artifact_id="a", display_name='say "hi"\\\n\tx', kind="file")])
    assert 'name="say \\"hi\\"\\\\\\n\\tx"' in block


def test_dedupe_by_id_and_version() -> None:
    refs = [
        Ref(artifact_id="a", version_id="1", display_name="first", kind="file"),
        Ref(artifact_id="a", version_id="1", display_name="again", kind="file"),
        Ref(artifact_id="a", version_id="2", display_name="second version", kind="file"),
        Ref(artifact_id="a", display_name="no version", kind="file"),
        Ref(artifact_id="a", display_name="no version again", kind="file"),
    ]
    lines = format_artifact_block("H", refs).splitlines()[1:]
    assert [line.split("name=")[1].split(",")[0] for line in lines] == [
        '"first"',
        '"second version"',
        '"no version"',
    ]


def test_appended_after_a_blank_line() -> None:
    refs = [Ref(artifact_id="a", display_name="n", kind="file")]
    assert append_artifact_block("Look at this.", "H", refs).startswith("Look at this.\n\nH\n- artifactId=a")
    assert append_artifact_block("", "H", refs).startswith("H\n")
    assert append_artifact_block("text", "H", []) == "text"
