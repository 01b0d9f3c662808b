"""Path confinement and bounded file reads.

Every file the compiler reads lies, after symlinks are resolved, inside one of
the configured runtime homes. A path is resolved first (FsView.realpath), then
opened one component at a time from the home it lies in (`open_confined`):
each directory with O_DIRECTORY | O_NOFOLLOW relative to the one opened before,
the file itself with O_NOFOLLOW. So a folder swapped for a symlink between the
check and the open fails the open instead of redirecting it out of the home.
Reads never block and never go past a budget:
a file is opened non-blocking, must be a regular file, and at most
`max_chars * 4 + 4` bytes are read (four bytes is the longest UTF-8 character,
and the extra character tells "exactly at the limit" from "longer"), so a
multi-gigabyte file costs no more than its limit.
"""

from __future__ import annotations

import codecs
import enum
import errno
import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pioneer_grpc import reasons
from pioneer_grpc.compiler.fsview import ERROR, MISSING, FsView
from pioneer_grpc.compiler.text import replace_controls, sanitize
from pioneer_grpc.errors import InvalidArgument, PermissionDenied

WORKSPACE_ROOT_FIELD = "input.workspace_root"
_READ_CHUNK = 64 * 1024
_UTF8 = codecs.getincrementaldecoder("utf-8")


@dataclass(frozen=True)
class Homes:
    """The resolved runtime homes, and the FsView every lookup and read inside them goes through."""

    roots: list[Path]
    view: FsView


def resolve_homes(allowed_roots: Sequence[Path], view: FsView) -> Homes:
    if not allowed_roots:
        raise PermissionDenied(
            "no runtime home is configured, so no workspace root is allowed", reason=reasons.NO_RUNTIME_HOME
        )
    return Homes([Path(view.realpath(os.fspath(root))) for root in allowed_roots], view)


def is_inside(path: str | Path, roots: Sequence[str | Path]) -> bool:
    """`path` is one of `roots` or lies below one; all resolved (absolute, normalized)."""
    text = os.fspath(path)
    for root in roots:
        prefix = os.fspath(root)
        if text == prefix or text.startswith(prefix if prefix.endswith("/") else prefix + "/"):
            return True
    return False


def _resolve_raw(raw: str, base: Path, field: str, view: FsView) -> Path:
    if "\x00" in raw:
        raise InvalidArgument.field(field, "must not contain a NUL character")
    return Path(view.realpath(os.fspath(base / raw if raw else base)))


def resolve_workspace_root(raw: str, homes: Homes, field: str = WORKSPACE_ROOT_FIELD) -> Path:
    """The resolved workspace root; empty means the first runtime home.

    A relative path is taken relative to the first runtime home. The result,
    with every symlink followed, must lie inside one of the homes.
    """
    resolved = _resolve_raw(raw, homes.roots[0], field, homes.view)
    if not is_inside(resolved, homes.roots):
        raise PermissionDenied(
            f"{field}: {raw!r} resolves to {resolved}, which is outside every runtime home",
            reason=reasons.WORKSPACE_OUTSIDE_HOME,
            metadata={"field": field, "path": raw, "resolved": os.fspath(resolved)},
        )
    return resolved


def resolve_inside(raw: str, base: Path, field: str, view: FsView) -> Path:
    """`raw` relative to `base`, which the resolved result must not leave."""
    resolved = _resolve_raw(raw, base, field, view)
    if not is_inside(resolved, [base]):
        raise PermissionDenied(
            f"{field}: {raw!r} resolves to {resolved}, which is outside {base}",
            reason=reasons.PATH_OUTSIDE_WORKSPACE,
            metadata={"field": field, "path": raw, "resolved": os.fspath(resolved), "base": os.fspath(base)},
        )
    return resolved


class ReadStatus(enum.Enum):
    LOADED = "loaded"
    MISSING = "missing"
    READ_ERROR = "read_error"
    OUTSIDE_ROOT = "outside_root"


@dataclass(frozen=True)
class FileRead:
    status: ReadStatus
    # Sanitized text, at most `max_chars` long.
    text: str = ""
    # True when the file held more than `max_chars` characters.
    truncated: bool = False
    # Exact sanitized length when the whole file was read; None when it was cut short.
    full_chars: int | None = None
    size_bytes: int = 0
    # Why it was not loaded (READ_ERROR), or where it points (OUTSIDE_ROOT).
    detail: str = ""
    # Control characters (NUL, escape, ...) replaced by U+FFFD: they never reach a prompt raw.
    controls_replaced: int = 0

    def original_chars_label(self) -> str:
        if self.full_chars is not None:
            return str(self.full_chars)
        return f"more than {len(self.text)} ({self.size_bytes} bytes)"


def _kind_of(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "not a regular file"


FOLDER_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
_DIR_FLAGS = FOLDER_FLAGS | os.O_NOFOLLOW
_FILE_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC
# What an open along a path returns when a component became a symlink (or not a directory).
_SWAPPED = (errno.ELOOP, errno.ENOTDIR)
SWAPPED_DETAIL = "the path changed while it was opened (a folder became a symlink)"


def open_confined(target: str, roots: Sequence[str | Path], flags: int = _FILE_FLAGS) -> int:
    """A descriptor for `target` (resolved, inside one of `roots`), reached without following symlinks.

    Opens the home, then each folder below it relative to the previous one, then
    the last name with `flags`; OSError (ELOOP or ENOTDIR when a component is now
    a symlink) otherwise. No descriptor but the one returned stays open.
    """
    root = next(os.fspath(r) for r in roots if is_inside(target, [r]))
    relative = os.path.relpath(target, root)
    names = [] if relative == "." else relative.split("/")
    if not names:
        return os.open(root, flags | os.O_NOFOLLOW)
    folder = os.open(root, _DIR_FLAGS)
    try:
        for name in names[:-1]:
            inner = os.open(name, _DIR_FLAGS, dir_fd=folder)
            os.close(folder)
            folder = inner
        return os.open(names[-1], flags | os.O_NOFOLLOW, dir_fd=folder)
    finally:
        os.close(folder)


def _open_error(exc: OSError) -> str:
    if exc.errno in _SWAPPED:
        return SWAPPED_DETAIL
    return exc.strerror or type(exc).__name__


def _read_prefix(fd: int, max_bytes: int) -> bytes:
    chunks: list[bytes] = []
    remaining = max_bytes
    while remaining > 0:
        chunk = os.read(fd, min(_READ_CHUNK, remaining))
        if not chunk:
            break
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)


def read_bounded(path: Path, max_chars: int, homes: Homes) -> FileRead:
    """Read at most `max_chars` characters of `path` without leaving the homes."""
    view = homes.view
    kind, detail = view.lookup(os.fspath(path))
    if kind == MISSING:
        return FileRead(ReadStatus.MISSING)
    if kind == ERROR:
        return FileRead(ReadStatus.READ_ERROR, detail=detail)
    target = view.realpath(os.fspath(path))
    if not is_inside(target, homes.roots):
        return FileRead(ReadStatus.OUTSIDE_ROOT, detail=target)
    try:
        fd = open_confined(target, homes.roots)
    except FileNotFoundError:
        view.reusable = False
        return FileRead(ReadStatus.MISSING)
    except OSError as exc:
        view.reusable = False
        return FileRead(ReadStatus.READ_ERROR, detail=_open_error(exc))
    try:
        info = os.fstat(fd)
        view.read_from(target, info)
        if not stat.S_ISREG(info.st_mode):
            return FileRead(ReadStatus.READ_ERROR, detail=_kind_of(info.st_mode))
        cap = max_chars * 4 + 4
        data = _read_prefix(fd, cap)
    except OSError as exc:
        view.reusable = False
        return FileRead(ReadStatus.READ_ERROR, detail=exc.strerror or type(exc).__name__)
    finally:
        os.close(fd)
    whole_file = len(data) < cap
    try:
        # Not final when cut short: a character split at the cut is not an error.
        decoded = _UTF8("strict").decode(data, final=whole_file)
    except UnicodeDecodeError as exc:
        return FileRead(
            ReadStatus.READ_ERROR,
            size_bytes=info.st_size,
            detail=f"not valid UTF-8 (byte {exc.start})",
        )
    text, controls = replace_controls(sanitize(decoded))
    truncated = len(text) > max_chars or not whole_file
    return FileRead(
        ReadStatus.LOADED,
        text=text[:max_chars],
        truncated=truncated,
        full_chars=len(text) if whole_file else None,
        size_bytes=info.st_size,
        controls_replaced=controls,
    )
