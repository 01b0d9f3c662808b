"""CompileCache: a reused compile is byte-identical to a fresh one and never outlives a change it read.

Every check compiles through the cache and with compile_prompt, and compares the
serialized payloads. An entry is kept only when the files it read last changed
SETTLE_NS before the compile began; file times here have nanosecond resolution
and the kernel clock ticks in 10 ms at most, so the tests use a short settle and
wait it out (`settle()`) wherever an entry should be kept.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from pioneer_grpc.compiler import compile_prompt
from pioneer_grpc.compiler.cache import CompileCache
from pioneer_grpc.errors import InvalidArgument, PermissionDenied
from pioneer_grpc.v1 import prompt_pb2

from .inputs import AGENTS_TEXT, SOUL_TEXT, full_profile_input, write_home

SETTLE_NS = 30_000_000
THREAD_FOLDER = "projects/car/photos"


def settle() -> None:
    time.sleep(SETTLE_NS / 1e9 * 1.5)


@pytest.fixture
def cache() -> CompileCache:
    return CompileCache(settle_ns=SETTLE_NS)


def serialized(payload: prompt_pb2.CompiledPromptPayload) -> bytes:
    return payload.SerializeToString(deterministic=True)


def check(
    cache: CompileCache, request: prompt_pb2.PromptCompileInput, roots: list[Path], **ids: str
) -> prompt_pb2.CompiledPromptPayload:
    """Compile through the cache; the result must be exactly what a fresh compile gives."""
    cached = cache.compile(request, roots, **ids)
    assert serialized(cached) == serialized(compile_prompt(request, roots, **ids))
    return cached


def primed(
    cache: CompileCache, request: prompt_pb2.PromptCompileInput, roots: list[Path]
) -> prompt_pb2.CompiledPromptPayload:
    """Settle, compile once (kept), compile again (reused)."""
    settle()
    first = check(cache, request, roots)
    hits = cache.hits
    again = check(cache, request, roots)
    assert cache.hits == hits + 1
    assert serialized(again) == serialized(first)
    return first


def fresh_after_change(
    cache: CompileCache,
    request: prompt_pb2.PromptCompileInput,
    roots: list[Path],
    before: prompt_pb2.CompiledPromptPayload,
) -> prompt_pb2.CompiledPromptPayload:
    """Right after a change (no settling): not reused, identical to a fresh compile, and different."""
    misses = cache.misses
    after = check(cache, request, roots)
    assert cache.misses == misses + 1
    assert serialized(after) != serialized(before)
    return after


def agents_request() -> prompt_pb2.PromptCompileInput:
    return prompt_pb2.PromptCompileInput(agents_md=prompt_pb2.AgentsMdSource(thread_folder=THREAD_FOLDER))


@pytest.mark.parametrize(
    "profile",
    [prompt_pb2.PROMPT_PROFILE_FULL, prompt_pb2.PROMPT_PROFILE_MINIMAL, prompt_pb2.PROMPT_PROFILE_NONE],
)
def test_reused_compile_is_byte_identical(home: Path, cache: CompileCache, profile: int) -> None:
    write_home(home)
    primed(cache, full_profile_input(profile), [home])
    assert len(cache) == 1


def test_soul_rewritten_in_place_with_same_size_and_mtime(home: Path, cache: CompileCache) -> None:
    write_home(home)
    soul = home / "SOUL.md"
    before = primed(cache, full_profile_input(), [home])
    old = os.stat(soul)
    with open(soul, "r+b") as handle:
        handle.write(b"C")  # "Voice: ..." becomes "Coice: ...", same size
    os.utime(soul, ns=(old.st_atime_ns, old.st_mtime_ns))
    new = os.stat(soul)
    # Same inode, size and mtime: only the ctime tells, and the settle rule makes sure it moved.
    assert (new.st_ino, new.st_size, new.st_mtime_ns) == (old.st_ino, old.st_size, old.st_mtime_ns)
    assert new.st_ctime_ns != old.st_ctime_ns
    after = fresh_after_change(cache, full_profile_input(), [home], before)
    assert "C" + SOUL_TEXT[1:] in after.stable_system_text


def test_user_md_added(home: Path, cache: CompileCache) -> None:
    write_home(home, user=False)
    before = primed(cache, full_profile_input(), [home])
    (home / "USER.md").write_text("Name: Sam", encoding="utf-8")
    after = fresh_after_change(cache, full_profile_input(), [home], before)
    assert "Name: Sam" in after.stable_system_text


def test_identity_md_removed(home: Path, cache: CompileCache) -> None:
    write_home(home)
    before = primed(cache, full_profile_input(), [home])
    (home / "IDENTITY.md").unlink()
    after = fresh_after_change(cache, full_profile_input(), [home], before)
    assert "identity_core" not in after.manifest.section_ids


def test_agents_md_added_closer_to_the_thread_folder(home: Path, cache: CompileCache) -> None:
    write_home(home)
    before = primed(cache, agents_request(), [home])
    assert AGENTS_TEXT in before.dynamic_system_text
    (home / THREAD_FOLDER / "AGENTS.md").write_text("Closer rules.", encoding="utf-8")
    after = fresh_after_change(cache, agents_request(), [home], before)
    assert "Closer rules." in after.dynamic_system_text
    assert AGENTS_TEXT not in after.dynamic_system_text


def test_empty_agents_md_filled_in(home: Path, cache: CompileCache) -> None:
    write_home(home)
    draft = home / THREAD_FOLDER / "AGENTS.md"
    draft.write_text("", encoding="utf-8")  # a draft: the walk goes on to the parent's file
    before = primed(cache, agents_request(), [home])
    assert AGENTS_TEXT in before.dynamic_system_text
    draft.write_text("Now with rules.", encoding="utf-8")
    after = fresh_after_change(cache, agents_request(), [home], before)
    assert "Now with rules." in after.dynamic_system_text


def test_agents_md_in_the_workspace_root_removed(home: Path, cache: CompileCache) -> None:
    write_home(home, agents=False)
    (home / THREAD_FOLDER).mkdir(parents=True)
    (home / "AGENTS.md").write_text("Root rules.", encoding="utf-8")
    before = primed(cache, agents_request(), [home])
    (home / "AGENTS.md").unlink()
    after = fresh_after_change(cache, agents_request(), [home], before)
    assert "agents_md" not in after.manifest.section_ids


def swap_symlink(link: Path, target: str) -> None:
    """Point `link` at `target` in one rename, as `ln -sfn` does."""
    temporary = link.with_name(link.name + ".new")
    temporary.symlink_to(target)
    os.replace(temporary, link)


def test_file_symlink_swapped_to_a_twin(home: Path, cache: CompileCache) -> None:
    write_home(home)
    (home / "a.md").write_text("Soul A", encoding="utf-8")
    (home / "b.md").write_text("Soul B", encoding="utf-8")
    stamp = os.stat(home / "a.md")
    os.utime(home / "b.md", ns=(stamp.st_atime_ns, stamp.st_mtime_ns))
    (home / "SOUL.md").unlink()
    (home / "SOUL.md").symlink_to("a.md")
    before = primed(cache, full_profile_input(), [home])
    swap_symlink(home / "SOUL.md", "b.md")
    after = fresh_after_change(cache, full_profile_input(), [home], before)
    assert "Soul B" in after.stable_system_text


def test_workspace_symlink_swapped(home: Path, cache: CompileCache) -> None:
    for name in ("one", "two"):
        write_home(home / name)
    (home / "ws").symlink_to("one")
    request = full_profile_input()
    request.workspace_root = "ws"
    before = primed(cache, request, [home])
    swap_symlink(home / "ws", "two")
    after = fresh_after_change(cache, request, [home], before)
    assert "(~/.pioneer/two/SOUL.md)" in after.stable_system_text


def test_home_symlink_swapped(tmp_path: Path, cache: CompileCache) -> None:
    base = tmp_path.resolve()
    write_home(base / "one")
    write_home(base / "two", user=False)
    (base / "home").symlink_to("one")
    before = primed(cache, full_profile_input(), [base / "home"])
    swap_symlink(base / "home", "two")
    after = fresh_after_change(cache, full_profile_input(), [base / "home"], before)
    assert f"{base}/two/SOUL.md" in [entry.path for entry in after.manifest.source_manifest]
    assert "### USER.md" not in after.stable_system_text


def test_workspace_symlink_swapped_from_outside_to_inside(
    home: Path, tmp_path: Path, cache: CompileCache
) -> None:
    outside = (tmp_path / "outside").resolve()
    write_home(outside)
    write_home(home / "inside")
    (home / "ws").symlink_to(outside)
    request = prompt_pb2.PromptCompileInput(workspace_root="ws")
    settle()
    with pytest.raises(PermissionDenied):
        cache.compile(request, [home])
    assert len(cache) == 0
    swap_symlink(home / "ws", "inside")
    check(cache, request, [home])


def test_invalid_input_is_not_kept(home: Path, cache: CompileCache) -> None:
    request = prompt_pb2.PromptCompileInput(dynamic_sections=[prompt_pb2.DynamicSection(id="has space")])
    with pytest.raises(InvalidArgument):
        cache.compile(request, [home])
    assert len(cache) == 0


def test_files_changed_just_before_the_compile_are_not_kept(home: Path) -> None:
    cache = CompileCache()  # the default settle, two seconds
    write_home(home)
    check(cache, full_profile_input(), [home])
    assert len(cache) == 0
    check(cache, full_profile_input(), [home])
    assert cache.hits == 0


def test_a_compile_that_met_a_symlink_loop_is_not_kept(home: Path, cache: CompileCache) -> None:
    write_home(home)
    (home / "SOUL.md").unlink()
    (home / "SOUL.md").symlink_to("SOUL.md")
    settle()
    payload = check(cache, full_profile_input(), [home])
    assert "file_read_error" in [d.code for d in payload.manifest.diagnostics]
    assert len(cache) == 0


def test_thread_and_turn_ids_are_set_per_call(home: Path, cache: CompileCache) -> None:
    write_home(home)
    request = full_profile_input()
    primed(cache, request, [home])
    one = check(cache, request, [home], thread_id="thr_1", turn_id="turn_1")
    two = check(cache, request, [home], thread_id="thr_2", turn_id="turn_2")
    assert (one.manifest.thread_id, one.manifest.turn_id) == ("thr_1", "turn_1")
    assert (two.manifest.thread_id, two.manifest.turn_id) == ("thr_2", "turn_2")
    one.ClearField("sections")
    one.manifest.section_ids.append("tampered")
    plain = check(cache, request, [home])
    assert (plain.manifest.thread_id, plain.manifest.turn_id) == ("", "")
    assert cache.misses == 1


def test_compile_into_overwrites_the_target(home: Path, cache: CompileCache) -> None:
    write_home(home)
    settle()
    target = prompt_pb2.CompiledPromptPayload(full_system_text="left over", boundary_marker="x")
    cache.compile_into(target, full_profile_input(), [home], thread_id="t", turn_id="u")
    expected = compile_prompt(full_profile_input(), [home], thread_id="t", turn_id="u")
    assert serialized(target) == serialized(expected)


def test_least_recently_used_entry_goes_first(home: Path) -> None:
    cache = CompileCache(max_entries=2, settle_ns=SETTLE_NS)
    write_home(home)
    settle()
    requests = [prompt_pb2.PromptCompileInput(extra_system=name) for name in ("a", "b", "c")]
    check(cache, requests[0], [home])
    check(cache, requests[1], [home])
    check(cache, requests[0], [home])  # a is now the most recent
    check(cache, requests[2], [home])  # evicts b
    assert (len(cache), cache.hits, cache.misses) == (2, 1, 3)
    check(cache, requests[0], [home])
    check(cache, requests[1], [home])
    assert (cache.hits, cache.misses) == (2, 4)


def test_entries_stay_within_the_byte_budget(home: Path) -> None:
    write_home(home)
    settle()
    size = CompileCache(settle_ns=SETTLE_NS)
    check(size, prompt_pb2.PromptCompileInput(extra_system="x"), [home])
    one_entry = size.size_bytes
    cache = CompileCache(max_bytes=one_entry * 2 + 10, settle_ns=SETTLE_NS)
    for name in "abcd":
        check(cache, prompt_pb2.PromptCompileInput(extra_system=name), [home])
        assert cache.size_bytes <= cache.max_bytes
    assert len(cache) == 2
    tiny = CompileCache(max_bytes=one_entry - 1, settle_ns=SETTLE_NS)
    check(tiny, prompt_pb2.PromptCompileInput(extra_system="x"), [home])
    assert (len(tiny), tiny.size_bytes) == (0, 0)


def test_clear_empties_the_cache(home: Path, cache: CompileCache) -> None:
    write_home(home)
    primed(cache, full_profile_input(), [home])
    cache.clear()
    assert (len(cache), cache.size_bytes) == (0, 0)
    check(cache, full_profile_input(), [home])
    assert cache.misses == 2


def test_a_lookup_answers_only_an_unchanged_kept_compile(home: Path, cache: CompileCache) -> None:
    write_home(home)
    request = full_profile_input()
    target = prompt_pb2.CompiledPromptPayload()
    assert not cache.cached_into(target, request, [home])
    assert target.ByteSize() == 0
    assert (cache.hits, cache.misses) == (0, 0)
    before = primed(cache, request, [home])
    hits = cache.hits
    assert cache.cached_into(target, request, [home], thread_id="t", turn_id="u")
    assert cache.hits == hits + 1
    assert (target.manifest.thread_id, target.manifest.turn_id) == ("t", "u")
    target.manifest.thread_id = target.manifest.turn_id = ""
    assert serialized(target) == serialized(before)
    (home / "SOUL.md").write_text("Voice: changed.", encoding="utf-8")
    assert not cache.cached_into(prompt_pb2.CompiledPromptPayload(), request, [home])
    assert cache.hits == hits + 1
    # The compile that follows sees the change.
    assert "Voice: changed." in fresh_after_change(cache, request, [home], before).stable_system_text
