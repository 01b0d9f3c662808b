"""Path confinement and bounded reads: nothing outside the runtime homes, nothing past a budget."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from pioneer_grpc.compiler import compile_prompt
from pioneer_grpc.compiler.fsview import FsView
from pioneer_grpc.compiler.paths import Homes, ReadStatus, read_bounded
from pioneer_grpc.errors import InvalidArgument, PermissionDenied
from pioneer_grpc.v1 import prompt_pb2

from .inputs import compile_in, section

TWO_GB = 2 * 1024**3


def only(home: Path) -> Homes:
    return Homes([home], FsView())


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    path = (tmp_path / "outside").resolve()
    path.mkdir()
    (path / "SECRET.md").write_text("top secret", encoding="utf-8")
    return path


def test_empty_workspace_root_is_the_first_runtime_home(home: Path, tmp_path: Path) -> None:
    (home / "SOUL.md").write_text("first home", encoding="utf-8")
    other = tmp_path / "other"
    other.mkdir()
    payload = compile_prompt(prompt_pb2.PromptCompileInput(), [home, other])
    assert "first home" in section(payload, "soul_core").content


def test_relative_workspace_root_is_taken_inside_the_first_home(home: Path) -> None:
    (home / "ws").mkdir()
    (home / "ws" / "SOUL.md").write_text("nested", encoding="utf-8")
    assert (
        "### SOUL.md (~/.pioneer/ws/SOUL.md)\nnested"
        in section(compile_in(home, workspace_root="ws"), "soul_core").content
    )


def test_absolute_workspace_root_in_a_second_home_is_allowed(home: Path, tmp_path: Path) -> None:
    second = (tmp_path / "second").resolve()
    second.mkdir()
    (second / "SOUL.md").write_text("second home", encoding="utf-8")
    payload = compile_prompt(prompt_pb2.PromptCompileInput(workspace_root=str(second)), [home, second])
    assert "second home" in section(payload, "soul_core").content


def test_dotdot_escape_is_permission_denied_naming_the_field(home: Path) -> None:
    with pytest.raises(PermissionDenied) as caught:
        compile_in(home, workspace_root="../outside")
    assert caught.value.message.startswith("input.workspace_root: '../outside' resolves to ")
    assert caught.value.message.endswith("which is outside every runtime home")


def test_absolute_path_elsewhere_is_permission_denied(home: Path, outside: Path) -> None:
    with pytest.raises(PermissionDenied, match=r"^input\.workspace_root: "):
        compile_in(home, workspace_root=str(outside))
    with pytest.raises(PermissionDenied, match=r"^input\.workspace_root: "):
        compile_in(home, workspace_root="/etc")


def test_symlinked_workspace_root_pointing_out_is_permission_denied(home: Path, outside: Path) -> None:
    (home / "link").symlink_to(outside)
    with pytest.raises(PermissionDenied, match=r"^input\.workspace_root: 'link' resolves to "):
        compile_in(home, workspace_root="link")


def test_nul_in_workspace_root_is_invalid_argument(home: Path) -> None:
    with pytest.raises(InvalidArgument) as caught:
        compile_in(home, workspace_root="a\x00b")
    assert [(v.field, v.description) for v in caught.value.violations] == [
        ("input.workspace_root", "must not contain a NUL character")
    ]


def test_symlinked_soul_md_outside_the_home_is_refused_and_not_read(home: Path, outside: Path) -> None:
    (home / "SOUL.md").symlink_to(outside / "SECRET.md")
    payload = compile_in(home)
    first = payload.manifest.diagnostics[0]
    assert (first.code, first.file) == ("file_outside_root", f"{home}/SOUL.md")
    assert (
        first.message
        == f"`SOUL.md` was not read: it resolves to {outside}/SECRET.md, outside every runtime home"
    )
    assert "top secret" not in payload.full_system_text
    assert payload.manifest.source_manifest[0].status == prompt_pb2.SOURCE_STATUS_READ_ERROR


def test_symlink_to_a_fifo_outside_is_refused_before_any_open(home: Path, outside: Path) -> None:
    os.mkfifo(outside / "pipe")
    (home / "SOUL.md").symlink_to(outside / "pipe")
    assert compile_in(home).manifest.diagnostics[0].code == "file_outside_root"


def test_symlink_inside_the_home_is_followed(home: Path) -> None:
    (home / "souls").mkdir()
    (home / "souls" / "v2.md").write_text("version two", encoding="utf-8")
    (home / "SOUL.md").symlink_to(home / "souls" / "v2.md")
    assert "version two" in section(compile_in(home), "soul_core").content


def test_symlinked_agents_md_outside_the_home_is_refused(home: Path, outside: Path) -> None:
    (home / "proj").mkdir()
    (home / "proj" / "AGENTS.md").symlink_to(outside / "SECRET.md")
    (home / "AGENTS.md").write_text("root rules", encoding="utf-8")
    payload = compile_in(home, agents_md=prompt_pb2.AgentsMdSource(thread_folder="proj"))
    refused = [d for d in payload.manifest.diagnostics if d.code == "file_outside_root"]
    assert [d.file for d in refused] == [f"{home}/proj/AGENTS.md"]
    assert "top secret" not in payload.full_system_text
    assert "<AGENTS_MD>\nroot rules\n</AGENTS_MD>" in section(payload, "agents_md").content


def test_agents_md_thread_folder_escape_is_permission_denied(home: Path) -> None:
    with pytest.raises(PermissionDenied, match=r"^input\.agents_md\.thread_folder: '\.\./\.\.' resolves to "):
        compile_in(home, agents_md=prompt_pb2.AgentsMdSource(thread_folder="../.."))


def test_directory_named_soul_md_is_a_read_error(home: Path) -> None:
    (home / "SOUL.md").mkdir()
    read = read_bounded(home / "SOUL.md", 100, only(home))
    assert (read.status, read.detail) == (ReadStatus.READ_ERROR, "a directory")


def test_fifo_named_soul_md_returns_at_once(home: Path) -> None:
    os.mkfifo(home / "SOUL.md")
    started = time.monotonic()
    read = read_bounded(home / "SOUL.md", 100, only(home))
    assert time.monotonic() - started < 1
    assert (read.status, read.detail) == (ReadStatus.READ_ERROR, "a FIFO")


def test_huge_sparse_file_is_read_only_up_to_its_budget(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with open(home / "SOUL.md", "wb") as handle:
        handle.truncate(TWO_GB)
    read_sizes: list[int] = []
    real_read = os.read

    def counting_read(fd: int, size: int) -> bytes:
        data = real_read(fd, size)
        read_sizes.append(len(data))
        return data

    monkeypatch.setattr(os, "read", counting_read)
    started = time.monotonic()
    payload = compile_in(home)
    assert time.monotonic() - started < 5
    assert sum(read_sizes) <= 20_000 * 4 + 4
    soul = payload.manifest.diagnostics[0]
    assert (soul.code, soul.message) == (
        "file_truncated",
        "bootstrap file `SOUL.md` truncated by per-file limit: "
        f"more than 20000 ({TWO_GB} bytes) -> 20000 chars",
    )
    assert payload.manifest.source_manifest[0].chars == 20_000


def test_read_is_bounded_by_the_limit_in_bytes(home: Path) -> None:
    (home / "f.md").write_text("a" * 1000, encoding="utf-8")
    read = read_bounded(home / "f.md", 10, only(home))
    assert (read.status, read.text, read.truncated, read.full_chars) == (
        ReadStatus.LOADED,
        "a" * 10,
        True,
        None,
    )
    exact = read_bounded(home / "f.md", 1000, only(home))
    assert (exact.text, exact.truncated, exact.full_chars) == ("a" * 1000, False, 1000)
