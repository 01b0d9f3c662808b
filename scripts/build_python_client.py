"""Build the light `pioneer-grpc-client` wheel (clients/python) into a folder.

Stages clients/python/pyproject.toml and README.md with the client's own files of
pioneer_grpc (client/, v1/, reasons.py, the PEP 561 py.typed marker) and an __init__
that imports nothing, then builds a wheel with `pip wheel` through the PEP 517 backend
the staged pyproject.toml names, in an isolated build environment: any Python >= 3.11
with pip builds it, inside the project's venv or not, whatever setuptools or wheel it has.
Usage: build_python_client.py OUT_DIR
"""

from __future__ import annotations

import importlib.util
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
    shutil.copy(ROOT / "pioneer_grpc" / "py.typed", package / "py.typed")
    (package / "__init__.py").write_text(PACKAGE_INIT)


def build(out: Path) -> Path:
    out = out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob("pioneer_grpc_client-*.whl"):
        old.unlink()
    with tempfile.TemporaryDirectory() as tmp:
        stage(Path(tmp))
        command = [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out), tmp]
        if subprocess.run(command, check=False).returncode != 0:
            raise BuildFailed(f"`{' '.join(command[:4])}` failed (its output is above)")
    [wheel] = sorted(out.glob("pioneer_grpc_client-*.whl"))
    return wheel


class BuildFailed(Exception):
    pass


def main() -> int:
    if len(sys.argv) != 2:
        sys.exit("usage: build_python_client.py OUT_DIR")
    if importlib.util.find_spec("pip") is None:
        sys.exit(f"{sys.executable} has no pip: run `{sys.executable} -m ensurepip` first")
    try:
        print(build(Path(sys.argv[1])))
    except BuildFailed as exc:
        sys.exit(f"build_python_client.py: {exc}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
