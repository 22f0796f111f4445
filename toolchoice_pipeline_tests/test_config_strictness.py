"""The run configuration and suite files are strict: credentials anywhere in ``params``, paths that leave their
directory, control characters in tool names, loosely typed values and inconsistent retry bounds are each one
problem naming file, line and field (and never echo a secret)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from toolchoice_pipeline.suites.config import load_run_config
from toolchoice_pipeline.suites.suite import load_suite
from toolchoice_pipeline.util.confined_paths import ALLOW_VARIABLE
from toolchoice_pipeline.util.errors import InputError
from toolchoice_pipeline_tests.conftest import DATA

BEARER = "Bearer " + "cfg" + "Tok9" * 6
PASSWORD = "pw" + "Qz7" * 4


def problems_of(data_dir: Path, text: str) -> list[str]:
    (data_dir / "toolchoice.yaml").write_text(text, encoding="utf-8")
    with pytest.raises(InputError) as raised:
        load_run_config(data_dir)
    found = [str(p) for p in raised.value.problems]
    assert not [p for p in found if BEARER[7:] in p or PASSWORD in p]  # a secret is never echoed
    return found


@pytest.mark.parametrize(
    "params, line, field",
    [
        ({"extra_headers": {"Authorization": BEARER}}, 5, "models[0].params.extra_headers.Authorization"),
        ({"extra_headers": {"x-api-key": "k" * 20}}, 5, "models[0].params.extra_headers.x-api-key"),
        ({"extra_body": {"api_key": "k" * 20}}, 5, "models[0].params.extra_body.api_key"),
        ({"extra_body": {"auth": [{"token": "tok-" + "x" * 20}]}}, 6, "models[0].params.extra_body.auth[0].token"),
        ({"api_base": f"https://bot:{PASSWORD}@llm.example.com/v1"}, 4, "models[0].params.api_base"),
    ],
)
def test_credentials_anywhere_in_params_are_refused(tmp_path, params, line, field):
    text = yaml.safe_dump({"models": [{"model": "openai/gpt-4o-mini", "params": params}]}, sort_keys=False)
    [problem] = problems_of(tmp_path, text)
    assert problem.startswith(f"{tmp_path / 'toolchoice.yaml'}:{line}: {field}: credentials may not be stored")
    assert "OPENAI_API_KEY" in problem


def test_a_userinfo_api_base_with_an_authorization_header_is_refused_before_any_call(tmp_path):
    params = {"api_base": f"https://bot:{PASSWORD}@llm.example.com/v1", "extra_headers": {"Authorization": BEARER}}
    found = problems_of(tmp_path, yaml.safe_dump({"models": [{"model": "openai/m", "params": params}]}))
    assert [p.split(": ")[1] for p in found] == [
        "models[0].params.api_base",
        "models[0].params.extra_headers.Authorization",
    ]


def test_harmless_params_are_kept(tmp_path):
    (tmp_path / "toolchoice.yaml").write_text(
        "models:\n  - model: openai/m\n    params: {api_base: 'http://localhost:8000/v1', temperature: 0,"
        " extra_headers: {X-Request-Source: ci}}\n",
        encoding="utf-8",
    )
    assert load_run_config(tmp_path).models[0].params["extra_headers"] == {"X-Request-Source": "ci"}


@pytest.mark.parametrize(
    "text, expected",
    [
        ("judge:\n  polls: '3'\n", ":2: judge.polls: Input should be a valid integer"),
        ("max_steps: 2.0\n", ":1: max_steps: Input should be a valid integer"),
        ("retries:\n  max_attempts: true\n", ":2: retries.max_attempts: Input should be a valid integer"),
        ("cache:\n  policy: 1\n", ":2: cache.policy:"),
        (
            "retries:\n  initial_wait_s: 100\n  max_wait_s: 0.001\n",
            ":1: retries: initial_wait_s (100.0) is larger than max_wait_s (0.001)",
        ),
        ("retries:\n  timeout_s: 1.0e+9\n", ":2: retries.timeout_s: Input should be less than or equal to 3600"),
    ],
)
def test_loose_types_and_inconsistent_retry_bounds_are_refused(tmp_path, text, expected):
    [problem] = problems_of(tmp_path, text)
    assert expected in problem


@pytest.mark.parametrize("path", ["../../x.sqlite", "/tmp/elsewhere.sqlite", "cache/../../x.sqlite"])
def test_a_cache_path_outside_the_data_dir_needs_the_environment_opt_in(tmp_path, monkeypatch, path):
    text = f"cache:\n  path: {path}\n"
    [problem] = problems_of(tmp_path, text)
    assert f":2: cache.path: '{path}' points outside the data directory" in problem and ALLOW_VARIABLE in problem
    monkeypatch.setenv(ALLOW_VARIABLE, "1")
    assert load_run_config(tmp_path).cache.path == path


def test_a_cache_path_inside_the_data_dir_is_fine(tmp_path):
    (tmp_path / "toolchoice.yaml").write_text("cache:\n  path: cache/sub/../calls.sqlite\n", encoding="utf-8")
    assert load_run_config(tmp_path).cache.path == "cache/sub/../calls.sqlite"


def _suite(tmp_path: Path, spec: str) -> Path:
    data_dir = tmp_path / "data"
    shutil.copytree(DATA / "suites" / "coding_agent", data_dir / "suites" / "coding_agent")
    (data_dir / "suites" / "coding_agent" / "suite.yaml").write_text(spec, encoding="utf-8")
    return data_dir


def test_suite_paths_outside_the_suite_dir_need_the_environment_opt_in(tmp_path, monkeypatch):
    outside = tmp_path / "data" / "suites" / "shared_catalog.yaml"
    data_dir = _suite(
        tmp_path,
        "name: coding_agent\ncatalog: ../shared_catalog.yaml\ntasks: /etc/hostname\nlive_catalogs: [../../x.json]\n",
    )
    shutil.copy(DATA / "suites" / "coding_agent" / "catalog.yaml", outside)
    with pytest.raises(InputError) as raised:
        load_suite(data_dir, "coding_agent")
    found = [str(p) for p in raised.value.problems]
    assert [p.split(": ")[1] for p in found] == ["catalog", "live_catalogs[0]", "tasks"] or sorted(
        p.split(": ")[1] for p in found
    ) == ["catalog", "live_catalogs[0]", "tasks"]
    assert all("points outside the suite directory" in p and ALLOW_VARIABLE in p for p in found)
    monkeypatch.setenv(ALLOW_VARIABLE, "1")
    (data_dir / "suites" / "coding_agent" / "suite.yaml").write_text(
        "name: coding_agent\ncatalog: ../shared_catalog.yaml\n", encoding="utf-8"
    )
    assert len(load_suite(data_dir, "coding_agent").catalog) == 10


@pytest.mark.parametrize("bad", ["Re\nad", "Read\x00", "Read\u2028x", "\tRead"])
def test_control_characters_in_a_tool_name_are_refused_with_file_line_and_field(tmp_path, bad):
    data_dir = _suite(tmp_path, "name: coding_agent\n")
    catalog = data_dir / "suites" / "coding_agent" / "catalog.yaml"
    tools = yaml.safe_load(catalog.read_text())
    tools.append({"name": bad, "description": "x", "parameters": {"type": "object"}})
    catalog.write_text(yaml.safe_dump(tools, sort_keys=False, allow_unicode=False))
    with pytest.raises(InputError) as raised:
        load_suite(data_dir, "coding_agent", check=False)
    [problem] = [str(p) for p in raised.value.problems]
    assert f"{catalog}:" in problem and "[10].name: a tool name may not contain control characters" in problem


def test_a_recorded_tool_name_with_control_characters_is_kept_printable_not_refused():
    from toolchoice_pipeline.ingest.turns import recorded_call
    from toolchoice_pipeline.suites.catalog import ToolDefinition
    from toolchoice_pipeline.util.sanitise import Sanitiser

    call = recorded_call("Ba\nsh\x00", {"command": "ls"}, "t1", Sanitiser())
    assert call.name == "Ba\ufffdsh\ufffd"
    assert ToolDefinition(name=call.name).name == call.name  # a catalog accepts what ingest keeps


@pytest.mark.parametrize(
    "spec, expected",
    [
        ("name: coding_agent\nmodels: !!set {a/m: null, b/m: null}\n", ":2: models: Input should be a valid list"),
        ("name: coding_agent\ndescription: !!binary aGk=\n", ":2: description: Input should be a valid string"),
        ("name: coding_agent\ncatalog: !!binary aGk=\n", ":2: catalog: Input should be a valid string"),
        (
            "name: coding_agent\n\nlive_catalogs: !!set {x.json: null}\n",
            ":3: live_catalogs: Input should be a valid list",
        ),
    ],
)
def test_suite_yaml_values_are_not_coerced(tmp_path, spec, expected):
    data_dir = _suite(tmp_path, spec)
    with pytest.raises(InputError) as raised:
        load_suite(data_dir, "coding_agent", check=False)
    [problem] = [str(p) for p in raised.value.problems]
    assert problem.startswith(str(data_dir / "suites" / "coding_agent" / "suite.yaml")) and expected in problem


@pytest.mark.parametrize("value", ['"yes"', '"false"', "1"])
def test_a_task_any_call_must_be_true_false_or_null(tmp_path, value):
    data_dir = _suite(tmp_path, "name: coding_agent\n")
    tasks = data_dir / "suites" / "coding_agent" / "tasks.jsonl"
    lines = tasks.read_text(encoding="utf-8").splitlines()
    lines[2] = lines[2].replace('"expected": {', f'"expected": {{"any_call": {value}, ', 1)
    tasks.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(InputError) as raised:
        load_suite(data_dir, "coding_agent", check=False)
    [problem] = [str(p) for p in raised.value.problems]
    assert problem.startswith(f"{tasks}:3: ") and "expected.any_call: Input should be a valid boolean" in problem
