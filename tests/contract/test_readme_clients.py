"""The README's client table: every client (Python, Go, Rust, TypeScript) with how to install it and its
first call, and every provider API by the name each language gives its Provider value, each name checked
against the committed stubs that define it."""

from __future__ import annotations

import re
from pathlib import Path

from pioneer_grpc.providers.specs import SPECS
from pioneer_grpc.v1 import provider_service_pb2

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()
GO_STUBS = (ROOT / "clients" / "go" / "gen" / "pioneer" / "v1" / "provider_service.pb.go").read_text()
RUST_STUBS = (ROOT / "clients" / "rust" / "src" / "gen" / "pioneer.v1.rs").read_text()


def _row(*needles: str) -> str:
    """The one table row of the README holding every needle."""
    rows = [line for line in README.splitlines() if line.startswith("|") and all(n in line for n in needles)]
    assert len(rows) == 1, (needles, rows)
    return rows[0]


def test_every_client_has_a_row_with_its_install_and_first_call():
    for client, install, call in (
        ("Python", "pip install", "Client.connect("),
        ("Go", "go mod edit -require=", "pioneer.Dial("),
        ("Rust", "pioneer-grpc-client =", "connect("),
        ("TypeScript", "npm install", "createClient("),
    ):
        row = _row(f"| {client}", install)
        assert call in row, row


def test_every_provider_is_named_as_each_language_spells_it():
    for value in provider_service_pb2.Provider.values():
        if value == provider_service_pb2.PROVIDER_UNSPECIFIED:
            continue
        name = provider_service_pb2.Provider.Name(value)
        bare = name.removeprefix("PROVIDER_")
        rust = "".join(word.capitalize() for word in bare.split("_"))
        go = f"Provider_{name}"
        row = _row(f"`{name}`")
        assert f"`{go}`" in row and re.search(rf"\b{go}\s+Provider = {value}\n", GO_STUBS), (go, row)
        assert f"`Provider::{rust}`" in row and f"    {rust} = {value}," in RUST_STUBS, (rust, row)
        assert f"`{bare}`" in row, row  # protoc-gen-es drops the shared prefix
        assert f"`{SPECS[value].name}`" in row, row
        path = SPECS[value].path("M")
        assert f"`{path.replace('/M/', '/{modelId}/').replace('/M:', '/{model}:')}`" in row, (path, row)
