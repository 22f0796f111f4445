"""``toolchoice validate`` and ``toolchoice schema`` on the demo suite, through the real console script."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from jsonschema import Draft202012Validator

from toolchoice_pipeline.cli import main
from toolchoice_pipeline.suites.suite import load_suite

REPO_DATA = Path(__file__).resolve().parents[1] / "data"


def toolchoice(*args: str, cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    """Run the installed ``toolchoice`` console script (next to this interpreter) as a user would."""
    script = Path(sys.executable).with_name("toolchoice")
    command = (
        [str(script)] if script.exists() else [sys.executable, "-c", "from toolchoice_pipeline.cli import main; main()"]
    )
    return subprocess.run(
        [*command, *args], cwd=cwd, capture_output=True, text=True, timeout=120, env={**os.environ, **(env or {})}
    )


def _catalog_version_by_the_recipe(catalog_file: Path) -> str:
    """DESIGN §2 written out independently: sha256 over the canonical JSON of the tools sorted by name."""
    tools = sorted(yaml.safe_load(catalog_file.read_text(encoding="utf-8")), key=lambda t: t["name"])
    text = json.dumps(tools, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


@pytest.mark.slow
def test_validate_prints_task_count_catalog_version_and_fixture_version(demo_copy):
    done = toolchoice("validate", "--suite", "coding_agent", "--data-dir", "data", cwd=demo_copy)
    assert done.returncode == 0, done.stderr
    suite = load_suite(demo_copy / "data", "coding_agent")
    lines = done.stdout.splitlines()
    assert lines[0] == (
        f"suite coding_agent: {len(suite.tasks)} tasks, 10 tools (0 from live dumps), match profile key_args"
    )
    assert lines[1] == f"catalog_version {_catalog_version_by_the_recipe(suite.directory / 'catalog.yaml')}"
    assert lines[2] == f"fixture_version {suite.fixture_version}"
    assert lines[3] == "models local/bm25-router, local/name-match; judge local/catalog-judge x3 polls"
    assert done.stderr == ""


@pytest.mark.slow
def test_an_unknown_field_on_line_2_of_tasks_jsonl_exits_2_naming_the_file_and_line(demo_copy):
    tasks_file = demo_copy / "data" / "suites" / "coding_agent" / "tasks.jsonl"
    lines = tasks_file.read_text(encoding="utf-8").splitlines()
    second = json.loads(lines[1])
    second["priority"] = "high"
    lines[1] = json.dumps(second)
    tasks_file.write_text("\n".join(lines) + "\n", encoding="utf-8")
    done = toolchoice("validate", "--suite", "coding_agent", "--data-dir", "data", cwd=demo_copy)
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.splitlines() == [
        "error: data/suites/coding_agent/tasks.jsonl:2: priority: unknown field "
        "(allowed: id, messages, expected, tools, tool_results, tags)"
    ]


@pytest.mark.slow
def test_the_data_directory_may_come_from_the_environment(demo_copy, tmp_path_factory):
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    done = toolchoice(
        "validate", "--suite", "coding_agent", cwd=elsewhere, env={"TOOLCHOICE_DATA_DIR": str(demo_copy / "data")}
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("suite coding_agent: ")


def test_validating_an_unknown_suite_names_the_suites_there_are(demo_copy, monkeypatch, capsys):
    monkeypatch.chdir(demo_copy)
    with pytest.raises(SystemExit) as exited:
        main(["validate", "--suite", "coding-agent", "--data-dir", "data"])
    assert exited.value.code == 2
    assert capsys.readouterr().err.splitlines() == [
        "error: data/suites/coding-agent/suite.yaml: no suite 'coding-agent' (suites in data: coding_agent)"
    ]


def _schemas(capsys, which: str = "all") -> dict:
    with pytest.raises(SystemExit) as exited:
        main(["schema", which])
    assert exited.value.code == 0
    return json.loads(capsys.readouterr().out)


def test_schema_prints_the_json_schema_of_each_format(capsys):
    schemas = _schemas(capsys)
    assert set(schemas) == {"task", "catalog", "suite", "config"}
    for schema in schemas.values():
        Draft202012Validator.check_schema(schema)
    assert _schemas(capsys, "task") == schemas["task"]


def test_the_demo_files_validate_against_the_printed_schemas(capsys):
    schemas = _schemas(capsys)
    directory = REPO_DATA / "suites" / "coding_agent"
    task_validator = Draft202012Validator(schemas["task"])
    for line in (directory / "tasks.jsonl").read_text(encoding="utf-8").splitlines():
        task_validator.validate(json.loads(line))
    Draft202012Validator(schemas["catalog"]).validate(yaml.safe_load((directory / "catalog.yaml").read_text()))
    Draft202012Validator(schemas["suite"]).validate(yaml.safe_load((directory / "suite.yaml").read_text()))
    Draft202012Validator(schemas["config"]).validate(yaml.safe_load((REPO_DATA / "toolchoice.yaml").read_text()))


def test_the_printed_task_schema_rejects_an_unknown_field(capsys):
    schemas = _schemas(capsys)
    line = json.loads((REPO_DATA / "suites" / "coding_agent" / "tasks.jsonl").read_text().splitlines()[0])
    assert Draft202012Validator(schemas["task"]).is_valid(line)
    assert not Draft202012Validator(schemas["task"]).is_valid({**line, "priority": "high"})


def test_the_printed_config_schema_takes_the_string_shorthand_and_needs_a_model(capsys):
    config = Draft202012Validator(_schemas(capsys, "config"))
    assert config.is_valid(
        {"models": ["local/bm25-router", {"model": "openai/gpt-4o-mini"}], "judge": {"model": "local/catalog-judge"}}
    )
    assert not config.is_valid({"models": []})
    assert not config.is_valid({"models": [{"model": "x", "api_base": "http://localhost"}]})


def test_fixture_version_follows_the_documented_recipe():
    """docs/formats.md: the tasks sorted by id, defaults filled in, with the match profile, canonical JSON."""
    directory = REPO_DATA / "suites" / "coding_agent"
    tasks = []
    for line in (directory / "tasks.jsonl").read_text(encoding="utf-8").splitlines():
        task = {"tools": None, "tool_results": None, "tags": [], **json.loads(line)}
        task["expected"] = {"arguments": {}, "calls": None, **task["expected"]}
        tasks.append(task)
    value = {"match_profile": "key_args", "tasks": sorted(tasks, key=lambda t: t["id"])}
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert load_suite(REPO_DATA, "coding_agent").fixture_version == hashlib.sha256(text.encode()).hexdigest()[:12]
