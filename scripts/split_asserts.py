"""Split `assert a and b` into `assert a` and `assert b`, so a failure says which half failed.

    python scripts/split_asserts.py tests/server tests/client ...   (files or folders)

Only statements alone on their lines are rewritten (the message, if any, is kept on
each part); the meaning is unchanged: the parts run in order and stop at the first
false one, as `and` did. Prints each file it changed.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path


def _parts(source: str, node: ast.Assert) -> list[str] | None:
    assert isinstance(node.test, ast.BoolOp)
    message = ast.get_source_segment(source, node.msg) if node.msg is not None else None
    parts = []
    for value in node.test.values:
        text = ast.get_source_segment(source, value)
        if text is None:
            return None
        if "\n" in text:
            text = f"({text})"
        parts.append(f"assert {text}" + (f", {message}" if message else ""))
    return parts


def rewrite(source: str) -> str:
    tree = ast.parse(source)
    lines = source.splitlines(keepends=True)
    found = [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Assert)
        and isinstance(node.test, ast.BoolOp)
        and isinstance(node.test.op, ast.And)
    ]
    # From the bottom up, so earlier line numbers stay valid.
    for node in sorted(found, key=lambda n: n.lineno, reverse=True):
        assert node.end_lineno is not None and node.end_col_offset is not None
        first, last = lines[node.lineno - 1], lines[node.end_lineno - 1]
        before, after = first[: node.col_offset], last[node.end_col_offset :]
        if before.strip() or (after.strip() and not after.strip().startswith("#")):
            continue  # shares its line with other code
        parts = _parts(source, node)
        if parts is None or any("\n" in part and not part.startswith("assert (") for part in parts):
            continue
        indent = " " * node.col_offset
        text = "".join(f"{indent}{part}\n" for part in parts)
        if after.strip():
            text = text[:-1] + "  " + after.strip() + "\n"
        lines[node.lineno - 1 : node.end_lineno] = [text]
    return "".join(lines)


def main(paths: list[str]) -> int:
    files = [f for p in map(Path, paths) for f in (sorted(p.rglob("*.py")) if p.is_dir() else [p])]
    for file in files:
        source = file.read_text()
        changed = rewrite(source)
        if changed != source:
            ast.parse(changed)
            file.write_text(changed)
            print(file)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
