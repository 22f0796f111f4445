"""The run configuration ``data/toolchoice.yaml``: the shipped file, the defaults, and keys refused."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from pydantic import ValidationError

from toolchoice_pipeline.suites.config import SECRET_PARAMS, ModelSpec, RunConfig, load_run_config
from toolchoice_pipeline.util.errors import InputError

REPO_DATA = Path(__file__).resolve().parents[1] / "data"


def test_the_shipped_configuration_is_the_offline_one():
    config = load_run_config(REPO_DATA)
    assert config.model_names() == ["local/bm25-router", "local/name-match"]
    assert config.judge.model.model == "local/catalog-judge"
    assert config.judge.polls == 3
    assert config.max_steps == 4
    assert config.cache.policy == "read_write"
    assert config.concurrency.max_in_flight >= config.concurrency.per_model >= 1
    assert config.retries.max_attempts >= 1


def test_the_shipped_configuration_holds_no_credentials():
    text = (REPO_DATA / "toolchoice.yaml").read_text(encoding="utf-8")
    assert not re.search(r"sk-[A-Za-z0-9]|api_key\s*:", text)
    config = load_run_config(REPO_DATA)
    for spec in [*config.models, config.judge.model]:
        assert not SECRET_PARAMS & set(spec.params)


def _commented_models() -> list[dict]:
    """The real-provider examples commented out under ``models:``, uncommented."""
    text = (REPO_DATA / "toolchoice.yaml").read_text(encoding="utf-8")
    block = text.split("\nmodels:\n", 1)[1].split("\njudge:", 1)[0]
    uncommented = [line.replace("# ", "", 1) for line in block.splitlines() if re.match(r"  #( - |   )\w", line)]
    return yaml.safe_load("\n".join(uncommented))


def test_the_commented_provider_examples_are_valid_configuration():
    examples = _commented_models()
    names = [item["model"] for item in examples]
    assert any(n.startswith("openai/") for n in names)
    assert any(n.startswith("anthropic/") for n in names)
    ollama = next(item for item in examples if item["model"].startswith("ollama_chat/"))
    assert ollama["params"]["api_base"].startswith("http://localhost")
    config = RunConfig.model_validate({"models": ["local/bm25-router", *examples]})
    assert config.model_names()[1:] == names


def test_a_missing_or_empty_file_gives_the_defaults(tmp_path):
    assert load_run_config(tmp_path) == RunConfig()
    (tmp_path / "toolchoice.yaml").write_text("# nothing configured yet\n", encoding="utf-8")
    assert load_run_config(tmp_path) == RunConfig()


def test_the_defaults():
    config = RunConfig()
    assert config.model_names() == ["local/bm25-router", "local/name-match"]
    assert (config.judge.model.model, config.judge.polls, config.judge.max_attempts) == ("local/catalog-judge", 3, 3)
    assert (config.max_steps, config.cache.policy, config.cache.path) == (4, "read_write", "cache/agent_calls.sqlite")
    assert (config.concurrency.max_in_flight, config.concurrency.per_model) == (16, 8)
    assert (config.retries.max_attempts, config.retries.timeout_s) == (6, 120.0)


def test_sections_left_out_keep_their_defaults(tmp_path):
    (tmp_path / "toolchoice.yaml").write_text("models: [openai/gpt-4o-mini]\njudge:\n  polls: 5\n", encoding="utf-8")
    config = load_run_config(tmp_path)
    assert config.model_names() == ["openai/gpt-4o-mini"]
    assert config.judge.polls == 5
    assert config.judge.model.model == "local/catalog-judge"
    assert config.max_steps == RunConfig().max_steps


def test_a_model_may_be_a_string_or_a_mapping_with_params_price_and_concurrency(tmp_path):
    (tmp_path / "toolchoice.yaml").write_text(
        "models:\n  - local/name-match\n  - model: ollama_chat/llama3.1\n"
        "    params: {api_base: 'http://localhost:11434', temperature: 0}\n"
        "    price: {input_usd_per_mtok: 0.5, output_usd_per_mtok: 1.5}\n    max_concurrency: 2\n",
        encoding="utf-8",
    )
    config = load_run_config(tmp_path)
    ollama = config.models[1]
    assert ollama.params == {"api_base": "http://localhost:11434", "temperature": 0}
    assert (ollama.price.input_usd_per_mtok, ollama.price.output_usd_per_mtok) == (0.5, 1.5)
    assert ollama.max_concurrency == 2


def test_with_models_keeps_the_settings_of_configured_models():
    config = RunConfig.model_validate({"models": [{"model": "openai/gpt-4o-mini", "params": {"temperature": 0}}]})
    chosen = config.with_models(["openai/gpt-4o-mini", "local/bm25-router"])
    assert chosen.model_names() == ["openai/gpt-4o-mini", "local/bm25-router"]
    assert chosen.models[0].params == {"temperature": 0}
    assert chosen.models[1].params == {}


def test_a_release_runs_the_requested_models_else_the_suites_else_the_configured_ones():
    config = RunConfig.model_validate({"models": [{"model": "openai/gpt-4o-mini", "params": {"temperature": 0}}]})
    suite_models = ["replay/suites/s/replay.jsonl"]
    assert config.for_suite(["local/name-match"], suite_models).model_names() == ["local/name-match"]
    assert config.for_suite([], suite_models).model_names() == suite_models
    assert config.for_suite(None, None).model_names() == ["openai/gpt-4o-mini"]
    assert config.for_suite(None, ["openai/gpt-4o-mini"]).models[0].params == {"temperature": 0}


@pytest.mark.parametrize("secret", sorted(SECRET_PARAMS))
def test_every_credential_parameter_is_refused(secret):
    with pytest.raises(ValidationError, match="may not be stored in the configuration"):
        ModelSpec(model="openai/gpt-4o-mini", params={secret: "x"})


def test_an_api_key_in_the_file_is_refused_naming_line_field_and_variable(tmp_path):
    (tmp_path / "toolchoice.yaml").write_text(
        "models:\n  - model: anthropic/claude-sonnet-4-5\n    params:\n      api_key: sk-ant-xyz\n", encoding="utf-8"
    )
    with pytest.raises(InputError) as raised:
        load_run_config(tmp_path)
    [problem] = raised.value.problems
    assert (problem.line, problem.field) == (4, "models[0].params.api_key")
    assert "ANTHROPIC_API_KEY" in problem.message
    assert "sk-ant-xyz" not in str(raised.value)  # the secret itself is never echoed


def test_an_api_key_for_the_judge_is_refused_too(tmp_path):
    (tmp_path / "toolchoice.yaml").write_text(
        "judge:\n  model: {model: openai/gpt-4o, params: {api_key: sk-proj-abc}}\n", encoding="utf-8"
    )
    with pytest.raises(InputError) as raised:
        load_run_config(tmp_path)
    assert [p.field for p in raised.value.problems] == ["judge.model.params.api_key"]
    assert "OPENAI_API_KEY" in raised.value.problems[0].message
    assert "sk-proj-abc" not in str(raised.value)


def test_the_judge_model_may_be_given_as_a_string():
    assert (
        RunConfig.model_validate({"judge": {"model": "openai/gpt-4o-mini"}}).judge.model.model == "openai/gpt-4o-mini"
    )


@pytest.mark.parametrize(
    "bad",
    [
        {"max_steps": 0},
        {"judge": {"polls": 0}},
        {"cache": {"policy": "always"}},
        {"concurrency": {"per_model": 0}},
        {"models": []},
    ],
)
def test_out_of_range_values_are_refused(bad):
    with pytest.raises(ValidationError):
        RunConfig.model_validate(bad)
