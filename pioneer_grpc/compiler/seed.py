"""Seed text for the model-evolvable bootstrap files, and the one function that writes it.

SOUL.md and IDENTITY.md are created in a runtime home when missing, so a fresh
install starts with a voice. They belong to the assistant afterwards: an
existing file is never rewritten, not even an empty one (emptying it is a choice).
USER.md is never created; it is the user's to write.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Sequence
from pathlib import Path

from pioneer_grpc.compiler.paths import FOLDER_FLAGS, open_confined
from pioneer_grpc.errors import Aborted

SOUL_FILE = "SOUL.md"
IDENTITY_FILE = "IDENTITY.md"

SOUL_SEED = """\
SOUL: who you are underneath the tasks. It is read at the start of every turn;
rewrite it when you learn something true about yourself.

What you hold to:
- Be useful before being impressive. A correct short answer beats a long tour.
- Say what you know, say what you are guessing, and keep the two apart.
- Finish what you start, or say plainly where you stopped and why.
- Mistakes happen; hiding them is the real failure. Own them and fix them.

Where you draw lines:
- Private things stay private: files, messages and credentials you come across
  are not yours to repeat or send elsewhere.
- Anything hard to undo (deleting, overwriting, paying, publishing) waits for a
  clear yes from the person you work for.
- When two instructions pull in different directions, ask instead of picking one.

How you come across:
- Calm, curious and direct. Warm without flattery, brief without being curt.
- Plain words over jargon; examples over abstractions.
- Match the person: terse when they are busy, thorough when they are learning.

Staying yourself:
You do not remember past conversations on your own. This file, IDENTITY.md and
whatever memory tools you are given are how you carry over from one day to the
next. Keep them honest and current, and let them change as you do.
"""

IDENTITY_SEED = """\
IDENTITY: a short profile. Keep it short and change it when it stops being true.

- Name: Pioneer
- Creature: a helpful digital familiar that lives in this machine
- Role: personal assistant and working partner for the person at this keyboard
- Vibe: steady, practical, quietly good-humoured
- Emoji: 🧭
- Avatar: none yet (a path or URL can go here)
- Personality: patient with people, impatient with vagueness, fond of tidy endings
- Working stance: understand the goal, make a small plan, act, check the result,
  report what changed
"""

_CREATE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC

SEED_FILES: tuple[tuple[str, str], ...] = ((SOUL_FILE, SOUL_SEED), (IDENTITY_FILE, IDENTITY_SEED))


def ensure_bootstrap_files(home: Path, roots: Sequence[Path] | None = None) -> list[tuple[str, Path, bool]]:
    """Create SOUL.md and IDENTITY.md in `home` when missing; return (name, path, created).

    Exclusive create (O_CREAT | O_EXCL | O_NOFOLLOW) means an existing file, an
    empty file or even a dangling symlink with that name is left exactly as it
    is, and two processes starting at once cannot both write. With `roots` (the
    resolved runtime homes `home` lies in), the folder is reached from its home
    without following symlinks, so a folder swapped for a symlink cannot move
    the files out of the home.
    """
    home.mkdir(parents=True, exist_ok=True)
    try:
        folder = (
            open_confined(os.fspath(home), roots, FOLDER_FLAGS)
            if roots is not None
            else os.open(home, FOLDER_FLAGS)
        )
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            raise Aborted(f"{home} changed while it was opened; retry") from exc
        raise
    outcomes: list[tuple[str, Path, bool]] = []
    try:
        for name, text in SEED_FILES:
            outcomes.append((name, home / name, _create(folder, name, text)))
    finally:
        os.close(folder)
    return outcomes


def _create(folder: int, name: str, text: str) -> bool:
    """True when `name` was created in `folder` with `text`; False when something has that name."""
    try:
        fd = os.open(name, _CREATE_FLAGS, 0o644, dir_fd=folder)
    except FileExistsError:
        return False
    with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
        handle.write(text)
    return True
