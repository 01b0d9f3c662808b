"""Build the light `pioneer-grpc-client` wheel (clients/python) into a folder.

Stages clients/python/pyproject.toml and README.md with the client's own files of
pioneer_grpc (client/, v1/, reasons.py) and an __init__ that imports nothing, then
builds a wheel with pip. Usage: build_python_client.py OUT_DIR
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE_INIT = '"""pioneer-grpc: the Python client (pioneer_grpc.client) and the pioneer.v1 stubs."""\n'


def stage(into: Path) -> None:
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / "clients" / "python" / name, into / name)
    package = into / "pioneer_grpc"
    skip = shutil.ignore_patterns("__pycache__", "*.binpb")
    shutil.copytree(ROOT / "pioneer_grpc" / "client", package / "client", ignore=skip)
    shutil.copytree(ROOT / "pioneer_grpc" / "v1", package / "v1", ignore=skip)
    shutil.copy(ROOT / "pioneer_grpc" / "reasons.py", package / "reasons.py")
    (package / "__init__.py").write_text(PACKAGE_INIT)


def build(out: Path) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        stage(Path(tmp))
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "wheel",
                "--no-deps",
                "--no-build-isolation",
                "-q",
                "-w",
                str(out),
                tmp,
            ],
            check=True,
        )
    [wheel] = sorted(out.glob("pioneer_grpc_client-*.whl"))
    return wheel


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: build_python_client.py OUT_DIR")
    print(build(Path(sys.argv[1])))
