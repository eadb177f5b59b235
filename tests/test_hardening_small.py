"""Issue 23, small ones: ``simulate(n_arenas=None)`` names the field; ``bdpd serve --arenas
FILE`` ends with one line and exit code 2 (it printed a 44-line traceback)."""

from __future__ import annotations

import pytest

import bdpd_jax


def test_simulate_n_arenas_none_names_the_field() -> None:
    with pytest.raises(ValueError, match="n_arenas"):
        bdpd_jax.simulate(bdpd_jax.default_config().model_dump(), n_arenas=None)


def test_serve_with_a_file_as_arenas_folder_exits_cleanly(tmp_path) -> None:
    pytest.importorskip("uvicorn")
    from typer.testing import CliRunner

    from bdpd_jax.cli import app

    f = tmp_path / "not-a-folder"
    f.write_text("x")
    r = CliRunner().invoke(app, ["serve", "--arenas", str(f), "--port", "3999"])
    assert r.exit_code == 2, r.output
    out = r.output
    assert "--arenas" in out and "Traceback" not in out and len(out.strip().splitlines()) <= 4  # rich may wrap
