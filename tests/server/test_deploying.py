"""docs/deploying.md's systemd unit: systemd itself parses it cleanly, and the page shows it as it is."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from tests.support import unavailable_here

ROOT = Path(__file__).resolve().parents[2]
UNIT = ROOT / "examples" / "pioneer-grpc.service"


def test_the_page_shows_the_unit_as_it_is():
    page = (ROOT / "docs" / "deploying.md").read_text()
    assert f"```ini\n{UNIT.read_text()}```" in page


def test_systemd_analyze_verify_finds_nothing_to_say_about_the_unit(tmp_path: Path):
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        unavailable_here("systemd-analyze is not installed (Debian's systemd)")
    # The unit as installed from this checkout: its ExecStart must exist for verify to pass.
    unit = tmp_path / "pioneer-grpc.service"
    unit.write_text(UNIT.read_text().replace("/opt/pioneer-grpc", str(ROOT)))
    assert (ROOT / ".venv" / "bin" / "pioneer-grpc").exists()
    result = subprocess.run([analyze, "verify", str(unit)], capture_output=True, text=True, timeout=60)
    # verify exits 0 on a line it could not parse, only printing it: every line it prints about the unit
    # counts as a failure here.
    said = [line for line in (result.stdout + result.stderr).splitlines() if "pioneer-grpc" in line]
    assert (result.returncode, said) == (0, [])


def test_a_broken_unit_is_caught(tmp_path: Path):
    """The check can fail: a value systemd cannot parse is a line about the unit."""
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        unavailable_here("systemd-analyze is not installed (Debian's systemd)")
    unit = tmp_path / "pioneer-grpc.service"
    text = (
        UNIT.read_text()
        .replace("/opt/pioneer-grpc", str(ROOT))
        .replace("LimitNOFILE=65536", "LimitNOFILE=lots")
    )
    unit.write_text(text)
    result = subprocess.run([analyze, "verify", str(unit)], capture_output=True, text=True, timeout=60)
    assert "LimitNOFILE" in result.stdout + result.stderr or "resource value" in result.stdout + result.stderr
