"""`pioneer-grpc compile INPUT.json`: compile a prompt locally, without a server.

INPUT.json is a PromptCompileInput in protobuf JSON form ("-" reads stdin).
The default output is the prompt with the cache boundary made visible and the
diagnostics on stderr; `--json` prints the whole CompiledPromptPayload.
Workspace roots are confined to the runtime homes of the server configuration
(`--home`, PIONEER_HOME, `--config`/PIONEER_CONFIG), and the persona and home
labels are the server's (`--persona`, `--persona-file`, `--home-label`, or the
same environment variables and TOML keys), so the output is what the server
would compile.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from google.protobuf import json_format

from pioneer_grpc.cli import exits
from pioneer_grpc.cli.persona import add_persona_flags
from pioneer_grpc.compiler import compile_prompt
from pioneer_grpc.compiler.bootstrap import USER_FILE
from pioneer_grpc.config import ConfigError, load_config
from pioneer_grpc.errors import InvalidArgument, PioneerError
from pioneer_grpc.v1 import prompt_pb2

VISIBLE_BOUNDARY = "──── cache boundary ────"
# Flags that are settings of the server configuration (None when not given).
CONFIG_FLAGS = ("home", "persona", "persona_file", "home_label", "identity_files")


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "compile", help="compile a system prompt locally from a PromptCompileInput JSON file"
    )
    parser.add_argument("input", help="PromptCompileInput as protobuf JSON; '-' reads stdin")
    parser.add_argument("--config", type=Path, help="the server's TOML file (also PIONEER_CONFIG)")
    parser.add_argument("--home", help="runtime home (default: as the server, ~/.pioneer)")
    add_persona_flags(parser)
    parser.add_argument("--json", action="store_true", help="print the CompiledPromptPayload as JSON")
    parser.set_defaults(func=run)


def render_visible(payload: prompt_pb2.CompiledPromptPayload) -> str:
    """The prompt as a person reads it: the boundary marker replaced by a visible rule."""
    if not payload.dynamic_system_text:
        return payload.stable_system_text
    parts = [payload.stable_system_text] if payload.stable_system_text else []
    return "\n".join([*parts, VISIBLE_BOUNDARY, payload.dynamic_system_text])


def run(args: argparse.Namespace) -> int:
    try:
        config = load_config({name: getattr(args, name) for name in CONFIG_FLAGS}, config_file=args.config)
        request = exits.read_json(args.input, prompt_pb2.PromptCompileInput())
        payload = compile_prompt(request, config.homes, settings=config.compile_settings())
    except (exits.UsageError, ConfigError) as exc:
        return exits.fail("compile", str(exc), exits.USAGE)
    except InvalidArgument as exc:
        return exits.invalid("compile", exc)
    except PioneerError as exc:
        # What the compiler refuses is in the input it was given.
        return exits.fail("compile", exc.message, exits.USAGE)
    if args.json:
        print(json_format.MessageToJson(payload, indent=2))
        return exits.OK
    print(render_visible(payload))
    for diagnostic in payload.manifest.diagnostics:
        print(f"diagnostic {diagnostic.code}: {diagnostic.message}", file=sys.stderr)
        for file_name, why in MISSING_FILE_HINTS.items():
            if diagnostic.code == "missing_file" and f"`{file_name}`" in diagnostic.message:
                print(f"  {why.format(home=config.homes[0])}", file=sys.stderr)
    # A missing USER.md is no diagnostic (it is optional); a person trying the CLI still learns of it.
    user = [e for e in payload.manifest.source_manifest if e.file == USER_FILE]
    if user and user[0].status == prompt_pb2.SOURCE_STATUS_MISSING:
        print(f"note: {USER_HINT.format(home=config.homes[0])}", file=sys.stderr)
    return exits.OK


# What each bootstrap file is for, printed under its missing_file diagnostic.
MISSING_FILE_HINTS = {
    "SOUL.md": "SOUL.md (the Soul Core section) says who the assistant is underneath its tasks; "
    "`pioneer-grpc serve` writes Pioneer's into its default home (~/.pioneer) when it starts, or into "
    "{home} with --seed-bootstrap-files.",
    "IDENTITY.md": "IDENTITY.md (the Identity Core section) names the assistant and its role; "
    "`pioneer-grpc serve` writes Pioneer's into its default home (~/.pioneer) when it starts, or into "
    "{home} with --seed-bootstrap-files.",
}
USER_HINT = (
    "USER.md is optional: what the assistant should know about you (name, role, preferences), "
    "added to the prompt as the User Persona section. Nothing writes it; create {home}/USER.md to use it."
)
