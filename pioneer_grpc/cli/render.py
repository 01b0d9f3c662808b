"""`pioneer-grpc render`: print the exact provider body for a ChatRequest in a JSON file.

    pioneer-grpc render --provider anthropic request.json --pretty

The file holds a ChatRequest in protobuf's JSON mapping (`-` reads stdin). The
body goes to stdout, byte for byte what RenderChatRequest returns (or indented
with --pretty): the same renderer decides the same cache breakpoints, with the
server's model registry when --config names its TOML file (its models_file).
The path and breakpoint count go to stderr, with each notice (an adaptation the
provider needed, as RenderChatRequest lists them, a model of another provider's
family among them). Invalid requests print each field violation once and exit
with status 2 (see exits.py).

What PrepareTurn sends for a round of thread T is this body with
`--prompt-cache-thread-id T` (and `--dynamic-placement before` for a thread set
to keep the dynamic half before the conversation).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from pioneer_grpc.cli import exits
from pioneer_grpc.config import ConfigError, load_config
from pioneer_grpc.errors import InvalidArgument
from pioneer_grpc.models.registry import RegistryError, load_registry
from pioneer_grpc.providers import render
from pioneer_grpc.providers.specs import BY_NAME
from pioneer_grpc.v1 import chat_pb2, provider_service_pb2

PLACEMENTS = {
    "after": chat_pb2.DYNAMIC_CONTEXT_PLACEMENT_AFTER_CONVERSATION,
    "before": chat_pb2.DYNAMIC_CONTEXT_PLACEMENT_BEFORE_CONVERSATION,
}


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "render",
        help="print the provider request body for a ChatRequest JSON file",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--provider", required=True, choices=list(BY_NAME))
    parser.add_argument("request", help="ChatRequest as protobuf JSON; - for stdin")
    parser.add_argument("--pretty", action="store_true", help="indent the JSON for reading")
    parser.add_argument(
        "--cache-key-prefix", help='prefix of the OpenAI prompt_cache_key (default "pioneer-")'
    )
    parser.add_argument(
        "--anthropic-min-cache-chars",
        type=int,
        help="Anthropic and Bedrock: a breakpoint only after this many characters "
        "(default: the model's minimum cacheable tokens from the registry)",
    )
    parser.add_argument(
        "--dynamic-placement",
        choices=list(PLACEMENTS),
        help="where the compiled prompt's dynamic half goes (default after the conversation)",
    )
    parser.add_argument(
        "--prompt-cache-thread-id",
        help="derive OpenAI's prompt_cache_key from this thread, as PrepareTurn does",
    )
    parser.add_argument(
        "--config", type=Path, help="the server's TOML file (also PIONEER_CONFIG): its models_file"
    )
    parser.set_defaults(func=run)
    return parser


def run(args: argparse.Namespace) -> int:
    try:
        request = exits.read_json(args.request, chat_pb2.ChatRequest())
    except exits.UsageError as exc:
        return exits.fail("render", str(exc), exits.USAGE)
    options = provider_service_pb2.RenderOptions()
    if args.cache_key_prefix is not None:
        options.cache_key_prefix = args.cache_key_prefix
    if args.anthropic_min_cache_chars is not None:
        options.anthropic_min_cache_chars = args.anthropic_min_cache_chars
    if args.dynamic_placement is not None:
        options.dynamic_context_placement = PLACEMENTS[args.dynamic_placement]
    if args.prompt_cache_thread_id is not None:
        options.prompt_cache_thread_id = args.prompt_cache_thread_id
    try:
        config = load_config({}, config_file=args.config)
        models = load_registry(config.models_file)
    except (ConfigError, RegistryError) as exc:
        return exits.fail("render", str(exc), exits.USAGE)
    try:
        rendered = render(BY_NAME[args.provider].provider, request, options, models=models)
    except InvalidArgument as exc:
        return exits.invalid("render", exc)
    if args.pretty:
        print(json.dumps(json.loads(rendered.body_json), ensure_ascii=False, indent=2))
    else:
        print(rendered.body_json)
    print(f"POST {rendered.path} (cache breakpoints: {rendered.cache_breakpoints})", file=sys.stderr)
    for notice in rendered.notices:
        where = f" at {notice.field}" if notice.field else ""
        exits.say("render", f"notice {notice.code}{where}: {notice.message}")
    return exits.OK
