"""Generate the Python stubs of protos/pioneer/v1 into pioneer_grpc/v1.

protoc names generated modules after the proto package (`pioneer.v1`); the
stubs live inside our package, so imports are rewritten to `pioneer_grpc.v1`.
It also writes DESCRIPTOR_SET: every pioneer.v1 file and its imports, with
source info, which server reflection serves so `grpcurl describe` shows comments.
The Connect (HTTP/JSON) service stubs, `*_connect.py`, come from the
protoc-gen-connectrpc plugin installed in the same environment, told to target
Google's protobuf runtime (`protobuf=google`) so both edges share the messages.
Usage: gen_python_stubs.py [--out DIR]   (default: pioneer_grpc/v1)
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
from pathlib import Path

import grpc_tools
from grpc_tools import protoc

ROOT = Path(__file__).resolve().parent.parent
PROTO_ROOT = ROOT / "protos"
DESCRIPTOR_SET = "descriptor_set.binpb"
IMPORT_RE = re.compile(r"^from pioneer\.v1 import ", re.MULTILINE)


def _connect_plugin() -> str:
    plugin = Path(sys.executable).parent / "protoc-gen-connectrpc"
    if not plugin.exists():
        raise SystemExit(f"{plugin} is missing: install the dev extra (`make venv`)")
    return str(plugin)


def generate(out: Path) -> None:
    protos = sorted(str(p.relative_to(PROTO_ROOT)) for p in (PROTO_ROOT / "pioneer" / "v1").glob("*.proto"))
    well_known = Path(grpc_tools.__file__).parent / "_proto"
    with tempfile.TemporaryDirectory() as tmp:
        args = [
            "protoc",
            f"-I{PROTO_ROOT}",
            f"-I{well_known}",
            f"--python_out={tmp}",
            f"--pyi_out={tmp}",
            f"--grpc_python_out={tmp}",
            f"--plugin=protoc-gen-connectrpc={_connect_plugin()}",
            f"--connectrpc_out={tmp}",
            "--connectrpc_opt=protobuf=google",
            f"--descriptor_set_out={Path(tmp) / DESCRIPTOR_SET}",
            "--include_imports",
            "--include_source_info",
            *protos,
        ]
        if protoc.main(args) != 0:
            raise SystemExit("protoc failed")
        out.mkdir(parents=True, exist_ok=True)
        for old in [*out.glob("*_pb2*.py*"), *out.glob("*_connect.py"), out / DESCRIPTOR_SET]:
            old.unlink(missing_ok=True)
        (out / DESCRIPTOR_SET).write_bytes((Path(tmp) / DESCRIPTOR_SET).read_bytes())
        for src in sorted((Path(tmp) / "pioneer" / "v1").iterdir()):
            text = IMPORT_RE.sub("from pioneer_grpc.v1 import ", src.read_text())
            (out / src.name).write_text(text)
    init = out / "__init__.py"
    if not init.exists():
        init.write_text(
            '"""Generated protobuf and gRPC stubs of pioneer.v1 (regenerate with `make proto`)."""\n'
        )


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, default=ROOT / "pioneer_grpc" / "v1")
    generate(parser.parse_args().out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
