"""Issue 29: a corpus of suite mistakes that ``toolchoice validate`` must name with file, line and field.

Each case starts from one clean suite (a weather tool with typed, bounded, enum, pattern, format, nested and
array parameters; a web search tool; the shipped offline models), written at test time, and makes exactly one
mistake in one file. The test runs the real CLI and asserts the exit code and that stderr names the mistake on
the right file, line and field, as an error (exit 2) or a warning (exit 0). Clean controls, including values
only the matching profile's normalisation makes matchable, must pass with no finding. ``MISTAKES`` is the corpus
whose catch figure docs/formats.md quotes.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from toolchoice_pipeline.cli import cli, run_guarded
from toolchoice_pipeline.util.errors import display_path

WEATHER = {
    "name": "get_weather",
    "description": "The weather forecast for a city.",
    "parameters": {
        "type": "object",
        "properties": {
            "city": {"type": "string", "minLength": 1},
            "days": {"type": "integer", "minimum": 1, "maximum": 7},
            "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
            "date": {"type": "string", "format": "date"},
            "zip": {"type": "string", "pattern": "^[0-9]{5}$"},
            "options": {
                "type": "object",
                "properties": {"detail": {"type": "boolean"}, "hours": {"$ref": "#/$defs/hours"}},
                "additionalProperties": False,
            },
            "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 3},
        },
        "required": ["city"],
        "$defs": {"hours": {"type": "integer", "minimum": 0, "maximum": 23}},
    },
}
SEARCH = {
    "name": "search_web",
    "description": "Search the web.",
    "parameters": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]},
}
CONFIG = {
    "models": [{"model": "local/bm25-router"}, {"model": "local/name-match"}],
    "judge": {"model": "local/catalog-judge"},
}


def _task(task_id: str, text: str, tool: str | None, arguments: dict | None = None, **extra: Any) -> dict:
    line = {
        "id": task_id,
        "messages": [{"role": "user", "content": text}],
        "expected": {"tool": tool, "arguments": arguments or {}},
        "tools": None,
        "tags": [],
    }
    line.update(extra)
    return line


def clean_suite() -> dict[str, Any]:
    """The clean suite as data: ``catalog``, ``tasks`` (line 2 is the one most cases change), ``config``,
    ``suite`` (suite.yaml)."""
    return {
        "catalog": [copy.deepcopy(WEATHER), copy.deepcopy(SEARCH)],
        "tasks": [
            _task(
                "search-1",
                "Search the web for the Louvre's opening hours",
                "search_web",
                {"query": {"regex": "Louvre"}},
            ),
            _task("weather-1", "Weather in Paris for 3 days, in celsius", "get_weather", {"city": "Paris", "days": 3}),
        ],
        "config": copy.deepcopy(CONFIG),
        "suite": {"name": "weather", "catalog": "catalog.yaml", "tasks": "tasks.jsonl", "match_profile": "key_args"},
    }


def write(data_dir: Path, suite: dict[str, Any]) -> dict[str, Path]:
    directory = data_dir / "suites" / "weather"
    directory.mkdir(parents=True, exist_ok=True)
    paths = {
        "suite": directory / "suite.yaml",
        "catalog": directory / "catalog.yaml",
        "tasks": directory / "tasks.jsonl",
        "config": data_dir / "toolchoice.yaml",
    }
    paths["suite"].write_text(yaml.safe_dump(suite["suite"], sort_keys=False))
    paths["catalog"].write_text(yaml.safe_dump(suite["catalog"], sort_keys=False))
    paths["tasks"].write_text("".join(json.dumps(t) + "\n" for t in suite["tasks"]))
    paths["config"].write_text(yaml.safe_dump(suite["config"], sort_keys=False))
    return paths


def validate(data_dir: Path, capsys) -> tuple[int, list[str]]:
    code = run_guarded(cli, ["validate", "--suite", "weather", "--data-dir", str(data_dir)])
    return code, capsys.readouterr().err.splitlines()


def line_holding(path: Path, text: str, occurrence: int = 1) -> int:
    """The 1-based line of ``path`` holding ``text`` (its ``occurrence``-th time): where a reader finds it."""
    seen = 0
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if text in line:
            seen += 1
            if seen == occurrence:
                return number
    raise AssertionError(f"{text!r} not in {path}")


@dataclass(frozen=True)
class Mistake:
    """One mistake: ``change`` edits the clean suite; the finding is expected in ``file`` (a key of
    :func:`write`'s paths) at the line holding ``marker`` (or ``line``), on ``field``, with ``words`` in it."""

    name: str
    change: Callable[[dict[str, Any]], None]
    file: str
    field: str
    words: str
    error: bool = True
    line: int | None = None
    marker: str | None = None
    env: dict[str, str | None] | None = None


def _args(**arguments: Any) -> Callable[[dict[str, Any]], None]:
    def change(suite: dict[str, Any]) -> None:
        suite["tasks"][1]["expected"]["arguments"].update(arguments)

    return change


def _weather(edit: Callable[[dict[str, Any]], None]) -> Callable[[dict[str, Any]], None]:
    def change(suite: dict[str, Any]) -> None:
        edit(suite["catalog"][0])

    return change


def _second_call(suite: dict[str, Any]) -> None:
    first = suite["tasks"][1]["expected"]
    first["calls"] = [
        {"tool": "get_weather", "arguments": dict(first["arguments"])},
        {"tool": "get_weather", "arguments": {"city": "Lyon", "days": "two"}},
    ]


def _messages(*messages: dict[str, Any]) -> Callable[[dict[str, Any]], None]:
    def change(suite: dict[str, Any]) -> None:
        suite["tasks"][1]["messages"] = list(messages)

    return change


def _config(edit: Callable[[dict[str, Any]], None]) -> Callable[[dict[str, Any]], None]:
    def change(suite: dict[str, Any]) -> None:
        edit(suite["config"])

    return change


def _inline_closed_required(suite: dict[str, Any]) -> None:
    tool = copy.deepcopy(SEARCH)
    tool["parameters"]["required"] = ["q"]
    tool["parameters"]["additionalProperties"] = False
    suite["tasks"][0]["tools"] = [tool]


def _rename_search(suite: dict[str, Any]) -> None:
    suite["catalog"][1]["name"] = "search web"
    suite["tasks"][0]["expected"]["tool"] = "search web"


USER = {"role": "user", "content": "Weather in Paris?"}
TASK_LINE = 2
FAKE_KEYS = {"OPENAI_API_KEY": "sk-test-not-a-key", "ANTHROPIC_API_KEY": "sk-ant-test-not-a-key"}
NO_KEYS = {"OPENAI_API_KEY": None, "ANTHROPIC_API_KEY": None}

MISTAKES = [
    # expected values against their parameter's schema (tasks.jsonl, line 2)
    Mistake(
        "string for an integer",
        _args(days="3"),
        "tasks",
        "expected.arguments.days",
        'is not of type "integer"',
        line=TASK_LINE,
    ),
    Mistake(
        "value outside the enum",
        _args(unit="kelvin"),
        "tasks",
        "expected.arguments.unit",
        "is not one of",
        line=TASK_LINE,
    ),
    Mistake("above maximum", _args(days=30), "tasks", "expected.arguments.days", "maximum of 7", line=TASK_LINE),
    Mistake("below minimum", _args(days=0), "tasks", "expected.arguments.days", "minimum of 1", line=TASK_LINE),
    Mistake("pattern broken", _args(zip="ABCDE"), "tasks", "expected.arguments.zip", "does not match", line=TASK_LINE),
    Mistake(
        "shorter than minLength", _args(city=""), "tasks", "expected.arguments.city", "shorter than 1", line=TASK_LINE
    ),
    Mistake(
        "float for an integer",
        _args(days=3.5),
        "tasks",
        "expected.arguments.days",
        'not of type "integer"',
        line=TASK_LINE,
    ),
    Mistake(
        "null for an integer",
        _args(days=None),
        "tasks",
        "expected.arguments.days",
        'not of type "integer"',
        line=TASK_LINE,
    ),
    Mistake(
        "nested wrong type",
        _args(options={"detail": "yes"}),
        "tasks",
        "expected.arguments.options",
        "(at detail)",
        line=TASK_LINE,
    ),
    Mistake(
        "nested $ref bound",
        _args(options={"hours": 30}),
        "tasks",
        "expected.arguments.options",
        "maximum of 23",
        line=TASK_LINE,
    ),
    Mistake(
        "nested extra property",
        _args(options={"detail": True, "wind": 1}),
        "tasks",
        "expected.arguments.options",
        "Additional properties",
        line=TASK_LINE,
    ),
    Mistake(
        "array too long",
        _args(tags=["a", "b", "c", "d"]),
        "tasks",
        "expected.arguments.tags",
        "more than 3 items",
        line=TASK_LINE,
    ),
    Mistake(
        "array item wrong type",
        _args(tags=[1]),
        "tasks",
        "expected.arguments.tags",
        'not of type "string"',
        line=TASK_LINE,
    ),
    Mistake(
        "every any_of alternative impossible",
        _args(unit={"any_of": ["kelvin", "rankine"]}),
        "tasks",
        "expected.arguments.unit",
        "no alternative",
        line=TASK_LINE,
    ),
    Mistake(
        "one any_of alternative impossible",
        _args(unit={"any_of": ["celsius", "kelvin"]}),
        "tasks",
        "expected.arguments.unit",
        "any_of[1]",
        error=False,
        line=TASK_LINE,
    ),
    Mistake(
        "optional value outside the enum",
        _args(unit={"value": "kelvin", "optional": True}),
        "tasks",
        "expected.arguments.unit",
        "(it matches only when the argument is left out)",
        error=False,
        line=TASK_LINE,
    ),
    Mistake(
        "regex on an integer parameter",
        _args(days={"regex": "3"}),
        "tasks",
        "expected.arguments.days",
        "a regex matches only a string",
        line=TASK_LINE,
    ),
    Mistake(
        "regex matching no enum value",
        _args(unit={"regex": "^k"}),
        "tasks",
        "expected.arguments.unit",
        "finds none of the parameter's enum values",
        line=TASK_LINE,
    ),
    Mistake(
        "value breaking a format",
        _args(date="tomorrow"),
        "tasks",
        "expected.arguments.date",
        "format",
        error=False,
        line=TASK_LINE,
    ),
    Mistake(
        "second expected call impossible",
        _second_call,
        "tasks",
        "expected.calls[1].arguments.days",
        'is not of type "integer"',
        line=TASK_LINE,
    ),
    # the catalog's own schemas (catalog.yaml; an inline catalog on its task's line)
    Mistake(
        "required names no property, object closed",
        _weather(lambda t: t["parameters"].update(required=["city", "country"], additionalProperties=False)),
        "catalog",
        "[0].parameters.required[1]",
        "no call can be valid",
        marker="- country",
    ),
    Mistake(
        "required names no property, object open",
        _weather(lambda t: t["parameters"].update(required=["city", "country"])),
        "catalog",
        "[0].parameters.required[1]",
        "always misses it",
        error=False,
        marker="- country",
    ),
    Mistake(
        "nested required names no property",
        _weather(lambda t: t["parameters"]["properties"]["options"].update(required=["wind"])),
        "catalog",
        "[0].parameters.properties.options.required[0]",
        "'wind'",
        marker="- wind",
        error=True,
    ),
    Mistake(
        "inline catalog required names no property",
        _inline_closed_required,
        "tasks",
        "tools[0].parameters.required[0]",
        "no call can be valid",
        line=1,
    ),
    Mistake(
        "tool without a description",
        lambda s: s["catalog"][1].update(description=""),
        "catalog",
        "[1].description",
        "no description",
        error=False,
        marker="description: ''",
    ),
    Mistake(
        "tool name providers refuse",
        _rename_search,
        "catalog",
        "[1].name",
        "refuse the tool name",
        error=False,
        marker="name: search web",
    ),
    # the conversations
    Mistake(
        "ends with the assistant",
        _messages(USER, {"role": "assistant", "content": "Sunny."}),
        "tasks",
        "messages[1].role",
        "ends with a message of role 'assistant'",
        line=TASK_LINE,
    ),
    Mistake(
        "ends with a system message",
        _messages(USER, {"role": "system", "content": "Be brief."}),
        "tasks",
        "messages[1].role",
        "role 'system'",
        line=TASK_LINE,
    ),
    Mistake(
        "empty user message",
        _messages({"role": "user", "content": ""}),
        "tasks",
        "messages[0].content",
        "empty user message",
        line=TASK_LINE,
    ),
    Mistake(
        "blank user message before the request",
        _messages({"role": "user", "content": "  \n"}, {"role": "assistant", "content": "Yes?"}, USER),
        "tasks",
        "messages[0].content",
        "empty user message",
        line=TASK_LINE,
    ),
    # the models, their params and the judge (toolchoice.yaml, suite.yaml)
    Mistake(
        "typo in a local model's params",
        _config(lambda c: c["models"][0].update(params={"temprature": 0})),
        "config",
        "models[0].params.temprature",
        "did you mean 'temperature'",
        marker="temprature",
    ),
    Mistake(
        "unknown local model",
        _config(lambda c: c["models"][1].update(model="local/name-mtach")),
        "config",
        "models[1].model",
        "did you mean 'local/name-match'",
        marker="local/name-mtach",
    ),
    Mistake(
        "unknown local judge",
        _config(lambda c: c["judge"].update(model="local/catalog-jugde")),
        "config",
        "judge.model.model",
        "unknown local model",
        marker="local/catalog-jugde",
    ),
    Mistake(
        "suite lists an unknown model",
        lambda s: s["suite"].update(models=["local/bm25"]),
        "suite",
        "models[0]",
        "unknown local model",
        marker="- local/bm25",
    ),
    Mistake(
        "typo in a sim model's params",
        _config(lambda c: c["models"].append({"model": "sim/fast", "params": {"sim_latencyms": 5}})),
        "config",
        "models[2].params.sim_latencyms",
        "did you mean 'sim_latency_ms'",
        marker="sim_latencyms",
    ),
    Mistake(
        "misspelt provider",
        _config(lambda c: c["models"].append({"model": "opena/gpt-4o-mini"})),
        "config",
        "models[2].model",
        "unknown provider: LiteLLM cannot tell which provider serves this model string; write it as "
        "<provider>/<model>, e.g. openai/gpt-4o-mini (did you mean the provider 'openai'?)",
        marker="opena/gpt-4o-mini",
        env=FAKE_KEYS,
    ),
    Mistake(
        "remote model without its key",
        _config(lambda c: c["models"].append({"model": "openai/gpt-4o-mini"})),
        "config",
        "models[2].model",
        "no API key: set OPENAI_API_KEY",
        marker="openai/gpt-4o-mini",
        env=NO_KEYS,
    ),
    Mistake(
        "remote judge without its key",
        _config(lambda c: c["judge"].update(model="anthropic/claude-sonnet-4-5")),
        "config",
        "judge.model.model",
        "no API key: set ANTHROPIC_API_KEY",
        marker="anthropic/claude-sonnet-4-5",
        env=NO_KEYS,
    ),
    Mistake(
        "typo in a remote model's params",
        _config(lambda c: c["models"].append({"model": "openai/gpt-4o-mini", "params": {"temprature": 0}})),
        "config",
        "models[2].params.temprature",
        "did you mean 'temperature'",
        marker="temprature",
        env=FAKE_KEYS,
    ),
    Mistake(
        "param the provider refuses",
        _config(lambda c: c["models"].append({"model": "anthropic/claude-sonnet-4-5", "params": {"logit_bias": {}}})),
        "config",
        "models[2].params.logit_bias",
        "LiteLLM refuses 'logit_bias' for anthropic",
        marker="logit_bias",
        env=FAKE_KEYS,
    ),
    Mistake(
        "unpriced model under a budget",
        _config(lambda c: c.update(budget_usd=5.0, models=[*c["models"], {"model": "openai/acme-finetune-7"}])),
        "config",
        "models[2].model",
        "unpriced (not in LiteLLM's pricing table), so budget_usd=5.0 could never stop it",
        marker="openai/acme-finetune-7",
        env=FAKE_KEYS,
    ),
    Mistake(
        "misspelt remote model name",
        _config(lambda c: c["models"].append({"model": "openai/gpt-4o-mnii"})),
        "config",
        "models[2].model",
        "did you mean openai/gpt-4o-mini",
        error=False,
        marker="openai/gpt-4o-mnii",
        env=FAKE_KEYS,
    ),
    Mistake(
        "param LiteLLM does not know",
        _config(lambda c: c["models"].append({"model": "openai/gpt-4o-mini", "params": {"beam_width": 4}})),
        "config",
        "models[2].params.beam_width",
        "passed to the provider as it is",
        error=False,
        marker="beam_width",
        env=FAKE_KEYS,
    ),
]


def _set_env(monkeypatch, env: dict[str, str | None] | None) -> None:
    for name, value in (env or {}).items():
        if value is None:
            monkeypatch.delenv(name, raising=False)
        else:
            monkeypatch.setenv(name, value)


@pytest.mark.parametrize("mistake", MISTAKES, ids=[m.name for m in MISTAKES])
def test_validate_names_each_mistake_with_file_line_and_field(tmp_path, capsys, monkeypatch, mistake):
    suite = clean_suite()
    mistake.change(suite)
    paths = write(tmp_path, suite)
    _set_env(monkeypatch, mistake.env)
    code, err = validate(tmp_path, capsys)
    path = paths[mistake.file]
    line = mistake.line if mistake.marker is None else line_holding(path, mistake.marker)
    prefix = f"{'error' if mistake.error else 'warning'}: {display_path(path)}:{line}: {mistake.field}: "
    named = [entry for entry in err if entry.startswith(prefix)]
    assert named, f"no finding starting {prefix!r} in:\n" + "\n".join(err)
    assert mistake.words in named[0]
    assert code == (2 if mistake.error else 0)


def test_the_corpus_covers_at_least_thirty_mistakes_of_every_kind():
    assert len(MISTAKES) >= 30
    assert {m.file for m in MISTAKES} == {"tasks", "catalog", "config", "suite"}
    assert {m.error for m in MISTAKES} == {True, False}


def test_the_clean_suite_passes_with_no_finding(tmp_path, capsys):
    write(tmp_path, clean_suite())
    code, err = validate(tmp_path, capsys)
    assert (code, err) == (0, [])


def _clean_with(change: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    suite = clean_suite()
    change(suite)
    return suite


CONTROLS = {
    "values the key_args profile normalises": _args(city="  Paris ", days=3.0),
    "any_of, optional and a regex the enum allows": _args(
        unit={"any_of": ["celsius", "fahrenheit"], "optional": True}, zip={"regex": "^75"}, city={"regex": "Par"}
    ),
    "a regex an enum value matches": _args(unit={"regex": "^cel"}),
    "nested values, a $ref and an array": _args(options={"detail": True, "hours": 7}, tags=["rain", "wind"]),
    "a value a valid call can hold exactly": _args(date="2026-12-03", zip="75001", unit={"value": "celsius"}),
    "an unpassable task kept as its source wrote it": lambda s: (
        s["tasks"][1]["expected"]["arguments"].update(days="3"),
        s["tasks"][1]["tags"].append("flag:unpassable"),
    ),
    "a conversation ending with a tool result": _messages(
        USER,
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "search_web", "arguments": "{}"}}],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "Paris: sunny"},
    ),
    "a user message made of parts": _messages({"role": "user", "content": [{"type": "text", "text": "Paris?"}]}),
    "a remote model with its key and supported params": _config(
        lambda c: c["models"].append({"model": "openai/gpt-4o-mini", "params": {"temperature": 0, "max_tokens": 64}})
    ),
    "an in-process model's own params": _config(
        lambda c: c["models"].append({"model": "sim/fast", "params": {"sim_latency_ms": 1, "temperature": 0}})
    ),
}


@pytest.mark.parametrize("name", list(CONTROLS))
def test_clean_controls_pass_with_no_finding(tmp_path, capsys, monkeypatch, name):
    _set_env(monkeypatch, FAKE_KEYS)
    write(tmp_path, _clean_with(CONTROLS[name]))
    code, err = validate(tmp_path, capsys)
    assert (code, err) == (0, [])


def test_the_bfcl_profile_never_refuses_what_it_can_match(tmp_path, capsys):
    """BFCL accepts a value of the answer's own type and normalises strings, so there a value the schema
    refuses is a warning, never an error; a regex, which never matches in that profile, is an error."""
    suite = clean_suite()
    suite["suite"]["match_profile"] = "bfcl"
    suite["tasks"][0]["expected"]["arguments"] = {"query": "Louvre opening hours"}
    suite["tasks"][1]["expected"]["arguments"].update(days="3", unit="Celsius")
    paths = write(tmp_path, suite)
    code, err = validate(tmp_path, capsys)
    assert code == 0
    shown = display_path(paths["tasks"])
    assert [e.split(": ")[2] for e in err] == ["expected.arguments.days", "expected.arguments.unit"]
    assert all(e.startswith(f"warning: {shown}:2: ") and "the bfcl profile may still match it" in e for e in err)
    suite["tasks"][0]["expected"]["arguments"] = {"query": {"regex": "Louvre"}}
    write(tmp_path, suite)
    code, err = validate(tmp_path, capsys)
    assert code == 2
    assert f"error: {shown}:1: expected.arguments.query: a regex matcher never matches in the bfcl profile" in err[0]


REPO = Path(__file__).resolve().parents[1]


def test_the_demo_suite_still_validates_with_no_finding(capsys):
    code = run_guarded(cli, ["validate", "--suite", "coding_agent", "--data-dir", str(REPO / "data")])
    assert (code, capsys.readouterr().err) == (0, "")


def _bfcl_categories() -> list[tuple[str, Path, Path | None]]:
    from toolchoice_pipeline_tests.bfcl_helpers import BFCL_DATA, CATEGORIES, answers_file, questions_file

    found = [(category, questions_file(category), answers_file(category)) for category in CATEGORIES]
    for questions in sorted((BFCL_DATA / "more").glob("BFCL_v4_*.json")):
        answers = BFCL_DATA / "more" / "possible_answer" / questions.name
        found.append((questions.stem.removeprefix("BFCL_v4_"), questions, answers if answers.exists() else None))
    return found


def test_every_imported_bfcl_category_still_validates(tmp_path, capsys):
    from toolchoice_pipeline.ingest.bfcl import import_bfcl

    categories = _bfcl_categories()
    assert len(categories) == 11
    for category, questions, answers in categories:
        import_bfcl(questions, answers, category, tmp_path)
        code = run_guarded(cli, ["validate", "--suite", category, "--data-dir", str(tmp_path)])
        err = capsys.readouterr().err.splitlines()
        assert code == 0, (category, err)
        assert not [line for line in err if line.startswith("error:")], category
        # BFCL's own quirks (null for a number, a value outside its enum) are at most warnings here
        assert all("the bfcl profile may still match it" in line for line in err), (category, err)


def test_an_inline_tool_is_warned_about_once_on_the_first_task_that_brings_it(tmp_path, capsys):
    suite = clean_suite()
    bare = {**copy.deepcopy(SEARCH), "description": ""}
    for task in suite["tasks"]:
        task["tools"] = [copy.deepcopy(WEATHER), bare]
    paths = write(tmp_path, suite)
    code, err = validate(tmp_path, capsys)
    assert code == 0
    assert err == [
        f"warning: {display_path(paths['tasks'])}:1: tools[1].description: the tool has no description: models "
        "choose tools by their descriptions"
    ]
