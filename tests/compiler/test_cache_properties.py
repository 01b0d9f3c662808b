"""Properties: cached and fresh compiles agree whatever the input and whatever changed on disk,
and FsView.realpath agrees with os.path.realpath on any path through links, loops and `..`."""

from __future__ import annotations

import itertools
import os
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pioneer_grpc.compiler import compile_prompt
from pioneer_grpc.compiler.cache import CompileCache
from pioneer_grpc.compiler.fsview import FsView
from pioneer_grpc.v1 import prompt_pb2

from .inputs import write_home
from .test_properties import dynamic_inputs, limits

SETTLE_NS = 20_000_000
FILES = [
    "SOUL.md",
    "IDENTITY.md",
    "USER.md",
    "AGENTS.md",
    "projects/AGENTS.md",
    "projects/car/AGENTS.md",
    "projects/car/photos/AGENTS.md",
]
LINK_TARGETS = ["spare.md", "projects/car/AGENTS.md", "missing.md", "../outside.md", "SOUL.md"]
THREAD_FOLDERS = ["projects/car/photos", "projects", "", "projects/car/photos/../.."]

small_text = st.text(st.sampled_from("ab \n"), max_size=12)
operation = st.one_of(
    st.tuples(st.just("write"), st.sampled_from(FILES), small_text),
    st.tuples(st.just("rewrite_same_size_and_mtime"), st.sampled_from(FILES)),
    st.tuples(st.just("remove"), st.sampled_from(FILES)),
    st.tuples(st.just("link"), st.sampled_from(FILES), st.sampled_from(LINK_TARGETS)),
    st.tuples(st.just("settle")),
)


def apply(home: Path, op: tuple[str, ...]) -> None:
    kind, *args = op
    if kind == "settle":
        time.sleep(SETTLE_NS / 1e9 * 1.5)
        return
    path = home / args[0]
    if kind == "write":
        path.unlink(missing_ok=True)
        path.write_text(args[1], encoding="utf-8")
    elif kind == "rewrite_same_size_and_mtime":
        if path.is_file() and not path.is_symlink() and path.stat().st_size:
            old = path.stat()
            data = path.read_bytes()
            path.write_bytes(bytes([data[0] ^ 1]) + data[1:])
            os.utime(path, ns=(old.st_atime_ns, old.st_mtime_ns))
    elif kind == "remove":
        path.unlink(missing_ok=True)
    else:
        path.unlink(missing_ok=True)
        path.symlink_to(args[1])


@pytest.fixture(scope="module")
def homes(tmp_path_factory: pytest.TempPathFactory) -> itertools.count[Path]:
    base = tmp_path_factory.mktemp("cache-properties").resolve()
    return (base / f"run{n}" / "home" for n in itertools.count())  # type: ignore[return-value]


@settings(max_examples=40, deadline=None)
@given(
    request=dynamic_inputs(),
    limit=limits(),
    profile=st.sampled_from(list(prompt_pb2.PromptProfile.values())),
    folder=st.none() | st.sampled_from(THREAD_FOLDERS),
    operations=st.lists(operation, max_size=8),
)
def test_cached_and_fresh_compiles_agree(
    homes: itertools.count[Path],
    request: prompt_pb2.PromptCompileInput,
    limit: prompt_pb2.PromptLimits,
    profile: int,
    folder: str | None,
    operations: list[tuple[str, ...]],
) -> None:
    home = write_home(next(homes))  # type: ignore[call-overload]
    (home / "spare.md").write_text("spare", encoding="utf-8")
    (home.parent / "outside.md").write_text("outside", encoding="utf-8")
    request.limits.CopyFrom(limit)
    request.profile = profile  # type: ignore[assignment]
    if folder is not None:
        request.agents_md.thread_folder = folder
    cache = CompileCache(settle_ns=SETTLE_NS)
    for step, op in enumerate([("settle",), *operations]):
        apply(home, op)
        for _ in range(2):
            cached = cache.compile(request, [home], thread_id="thr", turn_id="turn")
            fresh = compile_prompt(request, [home], thread_id="thr", turn_id="turn")
            assert cached.SerializeToString(deterministic=True) == fresh.SerializeToString(deterministic=True)
        if step == 0:
            assert cache.hits == 1  # the settled home is reused


TREE_NAMES = ["a", "b", "up", "self", "loop1", "dangling", "abs", "file", "missing", "..", ".", ""]


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("tree").resolve()
    (root / "a" / "b").mkdir(parents=True)
    (root / "a" / "file").write_text("x", encoding="utf-8")
    (root / "b").symlink_to("a/b")
    (root / "a" / "b" / "up").symlink_to("../..")
    (root / "a" / "self").symlink_to("self")
    (root / "loop1").symlink_to("loop2")
    (root / "loop2").symlink_to("loop1")
    (root / "a" / "dangling").symlink_to("nowhere/at/all")
    (root / "abs").symlink_to(root / "a")
    return root


tree_paths = st.tuples(st.lists(st.sampled_from(TREE_NAMES), max_size=7), st.booleans())


@settings(max_examples=300, deadline=None)
@given(paths=st.lists(tree_paths, min_size=1, max_size=4))
def test_realpath_agrees_with_os_path_realpath(tree: Path, paths: list[tuple[list[str], bool]]) -> None:
    """Several paths through one view, so later ones also take the shortcut under resolved folders."""
    cwd = os.getcwd()
    os.chdir(tree / "a")
    try:
        view = FsView()
        for parts, relative in paths:
            path = "/".join(parts) if relative else f"{tree}/{'/'.join(parts)}"
            assert view.realpath(path) == os.path.realpath(path)
        assert view.unchanged()
    finally:
        os.chdir(cwd)
