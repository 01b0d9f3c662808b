"""The lines that differ between two texts of a section, as runs of removed and added lines.

Pure: plain strings in, pioneer.v1 LineChange messages out. Runs in the order of the texts, each
naming where it starts on both sides (from 1); past `max_lines` lines listed, the rest is left out
and the answer says so.
"""

from __future__ import annotations

import difflib

from pioneer_grpc.v1 import manifest_service_pb2 as service_pb2

MAX_LINES = 400


def line_changes(
    base: str, target: str, max_lines: int = MAX_LINES
) -> tuple[list[service_pb2.LineChange], bool]:
    """The runs of lines that differ, and whether some were left out past `max_lines`."""
    old, new = base.splitlines(), target.splitlines()
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    runs: list[service_pb2.LineChange] = []
    listed = 0
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        room = max_lines - listed
        removed, added = old[i1:i2][:room], new[j1:j2][: max(0, room - (i2 - i1))]
        if room <= 0 or (len(removed), len(added)) != (i2 - i1, j2 - j1):
            if removed or added:
                runs.append(_run(i1, j1, removed, added))
            return runs, True
        runs.append(_run(i1, j1, removed, added))
        listed += len(removed) + len(added)
    return runs, False


def _run(i: int, j: int, removed: list[str], added: list[str]) -> service_pb2.LineChange:
    return service_pb2.LineChange(
        base_line=i + 1, target_line=j + 1, removed_lines=removed, added_lines=added
    )
