"""NUL and other control bytes in files never reach the prompt raw: U+FFFD and a diagnostic."""

from __future__ import annotations

import re
from pathlib import Path

from pioneer_grpc.v1 import prompt_pb2

from .inputs import compile_in

RAW_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def test_control_bytes_in_bootstrap_and_agents_files_are_replaced_and_reported(home: Path) -> None:
    (home / "SOUL.md").write_bytes(b"calm\x00 and \x1b[31mred\x1b[0m\x07\n\tindented\r\nline\x7f\xc2\x85end")
    (home / "sub").mkdir()
    (home / "sub" / "AGENTS.md").write_bytes(b"rule\x00one\x0ctwo")
    payload = compile_in(home, agents_md=prompt_pb2.AgentsMdSource(thread_folder="sub"))
    assert not RAW_CONTROL.search(payload.full_system_text)
    soul = "calm\ufffd and \ufffd[31mred\ufffd[0m\ufffd\n\tindented\nline\ufffd\ufffdend"
    assert soul in payload.full_system_text
    assert "rule\ufffdone\ufffdtwo" in payload.full_system_text
    reported = [
        (d.code, d.file.rsplit("/", 1)[-1], d.message)
        for d in payload.manifest.diagnostics
        if d.code == "file_control_characters"
    ]
    assert reported == [
        (
            "file_control_characters",
            "SOUL.md",
            "`SOUL.md` held 6 control character(s) (such as NUL or escape), shown as U+FFFD",
        ),
        (
            "file_control_characters",
            "AGENTS.md",
            "`AGENTS.md` held 2 control character(s) (such as NUL or escape), shown as U+FFFD",
        ),
    ]


def test_tabs_and_newlines_are_kept_and_not_reported(home: Path) -> None:
    (home / "SOUL.md").write_text("a\tb\nc\r\nd\n")
    payload = compile_in(home)
    assert "a\tb\nc\nd" in payload.full_system_text
    assert "file_control_characters" not in [d.code for d in payload.manifest.diagnostics]
