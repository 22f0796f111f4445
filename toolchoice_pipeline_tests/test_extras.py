"""What only a few users need is an extra (pyproject.toml's optional dependencies): the default install runs
`toolchoice run` without it (.ci/other-pythons runs the demo on an install with no extra), and the commands that
need one refuse before any work, with exit 2 and the extra's install command; `report` prints its tables and
leaves the pictures out unless they are asked for."""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path

import pytest

from toolchoice_pipeline.cli import main
from toolchoice_pipeline.releases.report import TrendPoint, trend_figure
from toolchoice_pipeline.util.extras import EXTRAS, MissingExtra, require
from toolchoice_pipeline_tests.release_helpers import write_scored

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"


@pytest.fixture
def no_matplotlib(monkeypatch):
    """As on an install without the charts extra: ``import matplotlib`` fails (None in sys.modules)."""
    for name in [n for n in sys.modules if n == "matplotlib" or n.startswith("matplotlib.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "matplotlib", None)


def run_cli(capsys, *args: str) -> tuple[object, str, str]:
    with pytest.raises(SystemExit) as exit_:
        main(list(args))
    out, err = capsys.readouterr()
    return exit_.value.code, out, err


def _refusal(err: str, command: str) -> None:
    assert "Traceback" not in err
    assert f"{command} needs matplotlib (module 'matplotlib'), which is not installed" in err
    assert (
        "install the charts extra with `pip install -e '.[charts]'` or `uv sync --locked --inexact --extra charts`"
        in err
    )


def test_run_with_chart_is_refused_before_the_run_without_the_charts_extra(no_matplotlib, demo_copy, capsys):
    data_dir = demo_copy / "data"
    before = sorted(p.relative_to(data_dir) for p in data_dir.rglob("*"))
    code, _, err = run_cli(capsys, "run", "--chart", "--no-judge", "--data-dir", str(data_dir), "--release", "c1")
    assert code == 2
    _refusal(err, "toolchoice run --chart")
    assert sorted(p.relative_to(data_dir) for p in data_dir.rglob("*")) == before  # nothing ran, nothing written


def test_report_prints_its_table_without_the_charts_extra_and_says_what_it_left_out(no_matplotlib, tmp_path, capsys):
    write_scored(tmp_path, "r1", written=1)
    code, out, err = run_cli(capsys, "report", "--data-dir", str(tmp_path))
    assert code == 0
    assert "suite unit: right tool % / right args % per release" in out and "r1" in out
    assert "Traceback" not in err
    assert "the trend chart and confusion heatmaps left out: matplotlib (module 'matplotlib') is not installed" in err
    assert "install the charts extra with `pip install -e '.[charts]'`" in err
    assert not list(tmp_path.rglob("*.png"))  # no picture half-drawn


@pytest.mark.parametrize("option", ["--chart", "--html"])
def test_report_refuses_the_pictures_asked_for_without_the_charts_extra(no_matplotlib, tmp_path, capsys, option):
    write_scored(tmp_path, "r1", written=1)
    target = tmp_path / ("out.png" if option == "--chart" else "out.html")
    code, out, err = run_cli(capsys, "report", option, str(target), "--data-dir", str(tmp_path))
    assert code == 2
    _refusal(err, f"toolchoice report {option}")
    assert out == "" and not target.exists()


def test_the_chart_functions_name_the_extra_too(no_matplotlib):
    point = TrendPoint("r1", "release", "unit", "local/a", 90.0, 80.0, 0.9, True)
    with pytest.raises(MissingExtra) as refused:
        trend_figure([point])
    assert refused.value.extra == "charts" and "the trend chart needs matplotlib" in str(refused.value)


def test_require_passes_when_the_module_is_installed():
    require("charts", "anything")  # the dev extra installs matplotlib


def test_each_extra_module_is_only_in_its_extra_and_the_dev_extra():
    project = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"]
    default = " ".join(project["dependencies"])
    for extra, (_, package) in EXTRAS.items():
        assert package not in default
        assert any(r.startswith(package) for r in project["optional-dependencies"][extra])
        assert any(r.startswith(package) for r in project["optional-dependencies"]["dev"])  # its tests run in CI
