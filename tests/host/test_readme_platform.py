"""The README's "Run the platform" commands run as written against a live server. Two things
differ: the address (the test's server listens on a free port instead of 3000) and a fixed
``seed`` in the creation payload (the README lets the server draw one), so the run is the
same every time."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from server_helpers import serve

ROOT = Path(__file__).resolve().parents[2]


def _block() -> str:
    text = (ROOT / "README.md").read_text()
    start = text.index("## Run the platform")
    blocks = re.findall(r"```bash\n(.*?)```", text[start:], flags=re.S)
    assert "bdpd serve" in blocks[0]
    return blocks[1]


def test_readme_platform_commands(tmp_path):
    if shutil.which("curl") is None:
        pytest.skip("curl not found")
    block = _block()
    assert "http://localhost:3000/api/arenas/$ARENA_ID/join" in block and '"agentType\\": \\"code\\"' in block
    with serve(tmp_path) as base:
        script = block.replace("http://localhost:3000", base).replace(
            '"agentTimeout": 30000,', '"agentTimeout": 30000, "seed": 7,'
        )
        assert '"seed": 7' in script
        out = subprocess.run(["bash", "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=240)
    assert out.returncode == 0, out.stderr
    assert '{"ok":true' in out.stdout
    assert '"playerId":"TrendConservative"' in out.stdout  # the A.4 agent joined
    assert "event: init" in out.stdout
    summary_head = out.stdout[out.stdout.index('{\n    "arenaId"') :]
    assert '"victory"' in summary_head and '"status": "closed"' in summary_head
