"""Publishing and re-gating use the settings a release was pinned with, never the live ``toolchoice.yaml``
(issue 26): once a release is finished, an invalid ``gate.noise`` written to the configuration afterwards does not
break its re-gate (``toolchoice gate``), its promotion's re-gate against a newer baseline, or a publish, and each
gates with the noise mode the release was gated with.

Real parts: Parquet warehouse, the release files, the CLI command in this process.
"""

from __future__ import annotations

import pytest

from toolchoice_pipeline.releases.document import GateDocument
from toolchoice_pipeline.releases.regate import regate
from toolchoice_pipeline.releases.store import ReleaseStore
from toolchoice_pipeline.suites.config import load_run_config
from toolchoice_pipeline.util.errors import InputError
from toolchoice_pipeline_tests.release_helpers import make_suite, publish

# a 10-point drop of local/a's right tool (2 of 20 tasks)
DROPPED = {"local/a": {"wrong_tool": {"t00", "t01"}}, "local/b": {}}


def spoil_config(data_dir) -> None:
    """Write an invalid ``gate.noise`` to ``toolchoice.yaml``, and show that the configuration no longer loads."""
    (data_dir / "toolchoice.yaml").write_text("gate:\n  noise: sometimes\n", encoding="utf-8")
    with pytest.raises(InputError, match="noise"):
        load_run_config(data_dir)


def test_a_finished_release_regates_with_its_pinned_noise_after_the_config_turned_invalid(tmp_path):
    from toolchoice_pipeline.cli import cli
    from toolchoice_pipeline.cli.common import run_guarded

    suite = make_suite(20)
    publish(tmp_path, suite, "r1", noise="require")
    published = publish(tmp_path, suite, "r2", models=DROPPED, noise="require")
    assert published.scores.gate is not None and published.scores.gate.noise == "require"
    spoil_config(tmp_path)

    result, baseline_models = regate(tmp_path, "r2")
    assert result.noise == "require" and result.baseline_release_id == "r1" and baseline_models is not None
    # the same settings as at publishing: the same gate, comparing local/a's 10-point drop against noise
    assert GateDocument.model_validate(result.to_json()) == published.scores.gate
    [drop] = [c for c in result.comparisons if c.model == "local/a" and c.metric == "right_tool_pct"]
    assert drop.drop == 10.0 and drop.ci95 is not None
    code = run_guarded(cli, ["gate", "r2", "--data-dir", str(tmp_path)])
    assert code == (0 if result.passed else 1)  # a verdict, not exit 2 for the configuration


def test_promotion_regates_against_a_newer_baseline_with_the_pinned_noise(tmp_path):
    suite = make_suite(20)
    publish(tmp_path, suite, "r1", noise="require")
    waiting = publish(tmp_path, suite, "r2", promote=False, noise="require")  # gated against r1, not promoted yet
    assert waiting.scores.baseline_release_id == "r1"
    publish(tmp_path, suite, "r3")  # promoted meanwhile, gated with the default noise mode
    store = ReleaseStore(tmp_path)
    assert store.baseline(suite.name) == "r3"
    spoil_config(tmp_path)

    promoted, document = store.promote_document(store.read_scores("r2"))
    assert promoted and store.baseline(suite.name) == "r2"
    assert document.baseline_release_id == "r3"
    assert document.gate is not None and document.gate.noise == "require"
    assert any("gated again against r3" in note for note in document.gate.notes)
    assert store.read_scores("r2") == document  # scores.json says so too


def test_publishing_gates_with_the_noise_it_is_given_whatever_the_config_says(tmp_path):
    suite = make_suite(20)
    spoil_config(tmp_path)
    publish(tmp_path, suite, "r1")
    published = publish(tmp_path, suite, "r2", models=DROPPED, noise="require")
    assert published.gate.noise == "require" and published.gate.baseline_release_id == "r1"
    assert ReleaseStore(tmp_path).read_scores("r2").gate.noise == "require"
