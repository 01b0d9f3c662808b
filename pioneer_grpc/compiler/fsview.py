"""FsView: the filesystem as one compile saw it, and whether it still looks the same.

Every question a compile asks of the filesystem goes through one FsView and is
kept with the answer the compile used:

  * each path it looked up (lstat): missing, an error, a symlink and its target,
    or present; nothing else about a directory is used (not its contents, not
    its times), only whether each name exists and whether it is a symlink;
  * each file it read: the identity of what it read (device, inode, mode, size,
    mtime and ctime of the open descriptor);
  * the working directory, when it resolved a relative path.

Given the same input, a compile's output is a function of those answers. So when
asking every question again gives the same answers (`unchanged`), compiling again
would give the same output. Paths are resolved by `realpath` here rather than by
os.path.realpath for that reason: each lstat and readlink it makes is a recorded
question. It follows os.path.realpath of Python 3.11 step by step.

A file's identity stands for its content only if every later write changes it.
File times come from a coarse clock (a kernel tick; a second or two on some
filesystems), so a file written twice within one tick can keep its size, mtime
and ctime. `settled` tells whether every file read was last changed at least
`settle_ns` before the compile began; then any later write shows as a newer
ctime. Outside that guarantee, as for make and git: writes through a shared
memory map, and a wall clock stepped backwards.
"""

from __future__ import annotations

import os
import stat
import time

MISSING = "missing"
ERROR = "error"
LINK = "link"
PRESENT = "present"

# (kind, detail): the strerror for ERROR, the link's target for LINK, else "".
Answer = tuple[str, str]
# st_dev, st_ino, st_mode, st_size, st_mtime_ns, st_ctime_ns
Identity = tuple[int, int, int, int, int, int]

_MISSING: Answer = (MISSING, "")
_PRESENT: Answer = (PRESENT, "")


def _ask(path: str) -> Answer:
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return _MISSING
    except OSError as exc:
        return (ERROR, exc.strerror or type(exc).__name__)
    if not stat.S_ISLNK(info.st_mode):
        return _PRESENT
    try:
        return (LINK, os.readlink(path))
    except OSError as exc:
        return (ERROR, exc.strerror or type(exc).__name__)


def identity(info: os.stat_result) -> Identity:
    return (info.st_dev, info.st_ino, info.st_mode, info.st_size, info.st_mtime_ns, info.st_ctime_ns)


class FsView:
    def __init__(self) -> None:
        self.started_ns = time.time_ns()
        self._answers: dict[str, Answer] = {}
        self._files: dict[str, Identity] = {}
        self._cwd: str | None = None
        # Absolute results of realpath, and their parents: no component is a symlink, as answered here.
        self._canonical: set[str] = set()
        # False once the compile met something not worth re-checking (a symlink loop, a failed open or read).
        self.reusable = True

    def lookup(self, path: str) -> Answer:
        """lstat `path` once per compile: the same name gets the same answer throughout."""
        answer = self._answers.get(path)
        if answer is None:
            answer = self._answers[path] = _ask(path)
        return answer

    def read_from(self, path: str, info: os.stat_result) -> None:
        """Record what was opened at `path` (fstat of the descriptor the content comes from)."""
        self._files[path] = identity(info)

    def realpath(self, path: str) -> str:
        """os.path.realpath(path), with every lookup it makes recorded."""
        head, _, name = path.rpartition("/")
        if head in self._canonical and name not in ("", ".", "..") and self.lookup(path)[0] != LINK:
            # What the full walk would return: it would get the same answers for head's components.
            return path
        absolute = os.path.isabs(path)
        if not absolute and self._cwd is None:
            self._cwd = os.getcwd()
        resolved, ok = self._join("", path, {})
        if not ok:
            # A symlink loop, which Python versions resolve differently: defer to this one, keep nothing.
            self.reusable = False
            return os.path.realpath(path)
        if not absolute:
            return os.path.normpath(os.path.join(self._cwd or os.getcwd(), resolved))
        resolved = os.path.normpath(resolved)
        prefix = resolved
        while prefix != "/" and prefix not in self._canonical:
            self._canonical.add(prefix)
            prefix = os.path.dirname(prefix)
        return resolved

    def _join(self, path: str, rest: str, seen: dict[str, str | None]) -> tuple[str, bool]:
        """posixpath._joinrealpath (non-strict), asking `lookup` instead of os.lstat and os.readlink."""
        if os.path.isabs(rest):
            rest = rest[1:]
            path = "/"
        while rest:
            name, _, rest = rest.partition("/")
            if not name or name == ".":
                continue
            if name == "..":
                if path:
                    path, name = os.path.split(path)
                    if name == "..":
                        path = os.path.join(path, "..", "..")
                else:
                    path = ".."
                continue
            newpath = os.path.join(path, name)
            kind, target = self.lookup(newpath)
            if kind != LINK:
                path = newpath
                continue
            if newpath in seen:
                known = seen[newpath]
                if known is not None:
                    path = known
                    continue
                return os.path.join(newpath, rest), False  # a symlink loop
            seen[newpath] = None
            path, ok = self._join(path, target, seen)
            if not ok:
                return os.path.join(path, rest), False
            seen[newpath] = path
        return path, True

    def settled(self, settle_ns: int) -> bool:
        """Reusable, and every file read last changed at least `settle_ns` before the compile began."""
        newest = max((max(i[4], i[5]) for i in self._files.values()), default=0)
        return self.reusable and newest < self.started_ns - settle_ns

    def unchanged(self) -> bool:
        """Every question asked again gets the same answer (one lstat per path, readlink per symlink)."""
        try:
            if self._cwd is not None and os.getcwd() != self._cwd:
                return False
        except OSError:
            return False
        for path, known in self._files.items():
            try:
                if identity(os.lstat(path)) != known:
                    return False
            except OSError:
                return False
        for path, answer in self._answers.items():
            # A file read at this path was checked above, and the same identity means present.
            if answer == _PRESENT and path in self._files:
                continue
            if _ask(path) != answer:
                return False
        return True
