"""The persona and home-label flags, shared by `serve` and `compile` (docs/persona.md)."""

from __future__ import annotations

import argparse


def add_persona_flags(parser: argparse.ArgumentParser) -> None:
    persona = parser.add_mutually_exclusive_group()
    persona.add_argument(
        "--persona", help="the Identity section's text (default: the built-in one; '' leaves it out)"
    )
    persona.add_argument("--persona-file", help="a UTF-8 file holding the Identity section's text")
    parser.add_argument(
        "--home-label", help="how bootstrap headings name the runtime home (default ~/.pioneer)"
    )
    parser.add_argument(
        "--identity-files",
        choices=["auto", "read", "skip"],
        help="read SOUL.md and IDENTITY.md: auto (default: only with the built-in persona), read, skip",
    )
