"""The ``local/...`` baseline agents: they choose only from the tools given, react to descriptions, fill
arguments from the request, abstain when nothing fits, end every episode, and answer through LiteLLM."""

import asyncio
import copy
import json

import pytest

from toolchoice_pipeline.providers import local_agents
from toolchoice_pipeline.providers.local_agents import (
    bm25_router,
    catalog_index,
    extract_request,
    name_match,
    rank_tools,
    split_negations,
    words,
)
from toolchoice_pipeline.records.calls import from_openai_message
from toolchoice_pipeline.scoring.matching import match_reply
from toolchoice_pipeline.suites.suite import load_suite
from toolchoice_pipeline_tests.conftest import CASES, DATA

CATALOG = json.loads((CASES / "catalog.json").read_text())
TOOLS = [{"type": "function", "function": tool} for tool in CATALOG]
AGENTS = {"bm25-router": bm25_router, "name-match": name_match}

# Our own requests (not the demo suite's), used to check properties over many inputs.
REQUESTS = [
    "What does the acronym CRUD stand for?",
    "Show me src/app/main.py",
    "Where is load_settings defined?",
    "Find every call to parse_config in the codebase",
    "List all python files under src/",
    "Run the test suite with `pytest -x tests/`",
    "Delete the build/ directory",
    "Create a file notes.txt containing 'hello world'",
    "In src/app.py replace 'DEBUG = True' with 'DEBUG = False'",
    "Search the web for the latest pandas release notes",
    "Fetch https://example.com/docs/page.html and summarise it",
    "Show the first 40 lines of README.md",
    "Update the todo list: write tests, fix lint",
    "Delegate the refactoring of the payments module to a helper agent",
    "grep for TODO in src/",
    "Find where load_settings is defined and then show me that file",
]


def ask(agent, text, tools=TOOLS):
    return agent([{"role": "user", "content": text}], tools, {})


def first_call(message):
    calls = message.get("tool_calls") or []
    if not calls:
        return None
    return calls[0]["function"]["name"], json.loads(calls[0]["function"]["arguments"])


def with_description(tools, name, description):
    changed = copy.deepcopy(tools)
    for tool in changed:
        if tool["function"]["name"] == name:
            tool["function"]["description"] = description
    return changed


def run_episode(agent, request, results=None, max_steps=8, tools=TOOLS):
    """Feed the agent's calls back with canned results until it answers in text; the list of calls made."""
    messages = [{"role": "user", "content": request}]
    called = []
    for _ in range(max_steps):
        reply = agent(messages, tools, {})
        messages.append(reply)
        if not reply.get("tool_calls"):
            return called, reply
        for call in reply["tool_calls"]:
            called.append((call["function"]["name"], json.loads(call["function"]["arguments"])))
            messages.append(
                {
                    "role": "tool",
                    "tool_call_id": call["id"],
                    "content": (results or {}).get(call["function"]["name"], "no result in this evaluation"),
                }
            )
    raise AssertionError(f"episode did not end within {max_steps} steps: {called}")


@pytest.mark.parametrize(
    ("request_text", "tool", "key_arguments"),
    [
        ("Where is load_settings defined?", "Grep", {"pattern": "load_settings"}),
        ("Show me src/app/main.py", "Read", {"file_path": "src/app/main.py"}),
        ("Which files match tests/**/test_*.py?", "Glob", {"pattern": "tests/**/test_*.py"}),
        ("List all python files under src/", "Glob", {"pattern": "**/*.py", "path": "src/"}),
        ("Run the test suite with `pytest -x tests/`", "Bash", {"command": "pytest -x tests/"}),
        ("Delete the build/ directory", "Bash", {"command": "rm -rf build/"}),
        (
            "Create a file notes.txt containing 'hello world'",
            "Write",
            {"file_path": "notes.txt", "content": "hello world"},
        ),
        (
            "In src/app.py replace 'DEBUG = True' with 'DEBUG = False'",
            "Edit",
            {"file_path": "src/app.py", "old_string": "DEBUG = True", "new_string": "DEBUG = False"},
        ),
        (
            "Search the web for the latest pandas release notes",
            "WebSearch",
            {"query": "the latest pandas release notes"},
        ),
        (
            "Fetch https://example.com/docs/page.html and summarise it",
            "WebFetch",
            {"url": "https://example.com/docs/page.html"},
        ),
        ("Show the first 40 lines of README.md", "Read", {"file_path": "README.md", "limit": 40}),
        ("Delegate the refactoring of the payments module to a helper agent", "Task", {}),
    ],
)
def test_router_calls_the_tool_whose_description_fits_with_arguments_from_the_request(
    request_text, tool, key_arguments
):
    name, arguments = first_call(ask(bm25_router, request_text))
    assert name == tool
    assert {key: arguments.get(key) for key in key_arguments} == key_arguments


@pytest.mark.parametrize("agent", AGENTS.values(), ids=AGENTS.keys())
@pytest.mark.parametrize(
    "request_text",
    ["What does the acronym CRUD stand for?", "Say hello in French.", "Explain what a Python decorator is"],
)
def test_agents_answer_in_text_when_no_tool_fits(agent, request_text):
    reply = ask(agent, request_text)
    assert "tool_calls" not in reply and isinstance(reply["content"], str) and reply["content"]
    assert from_openai_message(reply).calls == []


@pytest.mark.parametrize("agent", AGENTS.values(), ids=AGENTS.keys())
def test_agents_choose_only_from_the_tools_they_are_given(agent):
    renamed = copy.deepcopy(TOOLS)
    for tool in renamed:
        tool["function"]["name"] = "ext_" + tool["function"]["name"].lower()
    without_grep = [tool for tool in TOOLS if tool["function"]["name"] != "Grep"]
    for tools in (renamed, without_grep, TOOLS[:1]):
        names = {tool["function"]["name"] for tool in tools}
        for request in REQUESTS:
            call = first_call(ask(agent, request, tools))
            assert call is None or call[0] in names, (request, call)


@pytest.mark.parametrize("agent", AGENTS.values(), ids=AGENTS.keys())
def test_agents_are_deterministic(agent):
    first = [ask(agent, request) for request in REQUESTS]
    local_agents._INDEX_CACHE.clear()
    again = [ask(agent, request) for request in REQUESTS]
    assert first == again


@pytest.mark.parametrize("agent", AGENTS.values(), ids=AGENTS.keys())
def test_arguments_are_parameters_of_the_chosen_tool_with_their_types(agent):
    by_name = {tool["name"]: tool["parameters"] for tool in CATALOG}
    python_types = {"string": str, "integer": int, "number": (int, float), "array": list, "object": dict}
    for request in REQUESTS:
        call = first_call(ask(agent, request))
        if call is None:
            continue
        properties = by_name[call[0]]["properties"]
        assert set(call[1]) <= set(properties), (request, call)
        for key, value in call[1].items():
            declared = properties[key].get("type")
            if isinstance(declared, str):
                assert isinstance(value, python_types[declared]), (request, key, value)


def test_degrading_a_description_changes_the_routers_choices():
    depends_on_grep = [
        "Where is load_settings defined?",
        "Find every call to parse_config in the codebase",
        "Find the definition of class UserRepository",
    ]
    unrelated = ["Fetch https://example.com/docs/page.html and summarise it", "Delete the build/ directory"]
    before = {request: first_call(ask(bm25_router, request)) for request in depends_on_grep + unrelated}
    assert all(before[request][0] == "Grep" for request in depends_on_grep)

    vague = with_description(TOOLS, "Grep", "A utility.")
    after = {request: first_call(ask(bm25_router, request, vague)) for request in depends_on_grep + unrelated}
    assert all(after[request] is None or after[request][0] != "Grep" for request in depends_on_grep), after
    assert all(after[request] == before[request] for request in unrelated)


def test_name_match_falls_back_on_descriptions_so_it_reacts_to_them_too():
    request = "Replace the session's to-do list with these items"
    assert first_call(ask(name_match, request))[0] == "TodoWrite"
    vague = with_description(TOOLS, "TodoWrite", "Track work.")
    assert first_call(ask(name_match, request, vague)) is None


def test_the_catalog_index_is_cached_by_content_and_rebuilt_when_a_description_changes():
    assert catalog_index(copy.deepcopy(TOOLS)) is catalog_index(TOOLS)
    assert catalog_index(with_description(TOOLS, "Grep", "A utility.")) is not catalog_index(TOOLS)


def test_negation_cues_and_redirections_become_denied_words():
    parts = split_negations("Show one file. Read-only: cannot create, change or delete anything.")
    assert set(words("create change delete write edit")) <= set(parts.denied)
    assert "delet" not in words(parts.positive) and "show" in words(parts.positive)

    parts = split_negations("Search the PUBLIC internet. Knows nothing about local files or this repository.")
    assert set(words("local files repository")) <= set(parts.denied)

    parts = split_negations(
        "Run a shell command. Prefer Read to show a file, Grep to search contents.", ("Read", "Grep")
    )
    assert parts.credited == {"Read": words("show a file"), "Grep": words("search contents")}
    assert "show" in parts.denied and "show" not in words(parts.positive)


def test_a_tool_that_denies_the_requested_capability_loses_the_request():
    manager = {
        "type": "function",
        "function": {
            "name": "RepoFiles",
            "description": "Manage the files of the repository: list them and show them.",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
        },
    }
    shell = {
        "type": "function",
        "function": {
            "name": "Shell",
            "description": "Run a shell command, e.g. to delete, move or copy files.",
            "parameters": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]},
        },
    }
    request = "manage the repository files: delete old.txt"
    plain = rank_tools(catalog_index([manager, shell]), request)
    assert plain.denied == {} and first_call(ask(bm25_router, request, [manager, shell]))[0] == "RepoFiles"

    denying = with_description(
        [manager, shell],
        "RepoFiles",
        "Manage the files of the repository: list them and show them. It cannot delete files.",
    )
    ranking = rank_tools(catalog_index(denying), request)
    assert ranking.denied == {"RepoFiles": ["delet"]}
    assert dict((i, s) for s, i in ranking.scored)[0] == pytest.approx(
        local_agents.NEGATION_FACTOR * dict((i, s) for s, i in plain.scored)[0]
    )
    assert first_call(ask(bm25_router, request, denying)) == ("Shell", {"command": "rm old.txt"})


def test_a_single_tool_catalog_still_routes_and_abstains():
    weather = [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "description": "Current weather for a city.",
                "parameters": {
                    "type": "object",
                    "properties": {"city": {"type": "string", "description": "City name"}},
                    "required": ["city"],
                },
            },
        }
    ]
    assert first_call(ask(bm25_router, "What's the weather like in Paris right now?", weather))[0] == "get_weather"
    assert first_call(ask(bm25_router, "Write a limerick about cheese", weather)) is None


def test_short_agreement_is_read_with_the_earlier_turns():
    history = [
        {"role": "user", "content": "The tests in tests/test_api.py fail with an import error."},
        {"role": "assistant", "content": "Do you want me to run them with pytest to see the full traceback?"},
    ]
    reply = bm25_router([*history, {"role": "user", "content": "yes, do it"}], TOOLS, {})
    name, arguments = first_call(reply)
    assert name == "Bash" and arguments["command"].startswith("pytest")
    closing = bm25_router([*history, {"role": "user", "content": "great, that's all for today"}], TOOLS, {})
    assert first_call(closing) is None


def test_a_two_step_request_makes_two_calls_the_second_using_the_first_result_then_ends():
    called, final = run_episode(
        bm25_router,
        "Find where load_settings is defined and then show me that file",
        {"Grep": "src/settings.py:12: def load_settings():"},
    )
    assert called == [("Grep", {"pattern": "load_settings"}), ("Read", {"file_path": "src/settings.py"})]
    assert final["content"].startswith("Done")


@pytest.mark.parametrize("agent", AGENTS.values(), ids=AGENTS.keys())
def test_every_episode_ends_with_a_text_answer(agent):
    for request in REQUESTS:
        called, final = run_episode(agent, request)
        assert len(called) <= 3 and isinstance(final["content"], str)


def test_name_match_is_a_different_and_cruder_baseline():
    assert first_call(ask(name_match, "Where is load_settings defined?")) is None
    assert first_call(ask(bm25_router, "Where is load_settings defined?"))[0] == "Grep"
    name, arguments = first_call(ask(name_match, "grep for TODO in src/"))
    assert name == "Grep" and set(arguments) == {"pattern"}
    assert first_call(ask(name_match, "Run the test suite with `pytest -x tests/` please")) == (
        "Bash",
        {"command": "pytest -x tests/"},
    )


def test_values_are_extracted_from_a_request_by_kind():
    values = extract_request(
        "Run `pytest -x tests/` then fetch https://example.org/a?b=1, check src/**/*.py and README.md "
        "for load_settings and os.path.join, the first 40 lines, and say 'done'"
    )
    assert values.commands == ["pytest -x tests/"]
    assert values.urls == ["https://example.org/a?b=1"]
    assert values.globs == ["src/**/*.py"]
    assert values.paths == ["README.md"]
    assert values.identifiers == ["load_settings", "os.path.join"]
    assert [number for number, _ in values.numbers] == [40]
    assert values.quoted == ["pytest -x tests/", "done"]


@pytest.mark.parametrize("model", ["local/bm25-router", "local/name-match"])
def test_agents_answer_through_litellm(model):
    import litellm

    from toolchoice_pipeline.providers import register_providers

    register_providers()
    response = asyncio.run(
        litellm.acompletion(
            model=model,
            messages=[{"role": "user", "content": "grep the codebase for load_settings"}],
            tools=TOOLS,
            num_retries=0,
            max_retries=0,
        )
    )
    reply = from_openai_message(response.choices[0].message.model_dump())
    assert [call.name for call in reply.calls] == ["Grep"]
    assert response.usage.prompt_tokens > 0


def test_router_beats_name_match_on_the_demo_suite_and_neither_is_perfect_or_useless():
    suite = load_suite(DATA, "coding_agent")
    shares = {}
    for name, agent in AGENTS.items():
        right = 0
        graded = [task for task in suite.tasks if task.expected is not None]
        for task in graded:
            catalog = suite.task_catalog(task)
            reply = from_openai_message(agent(task.message_dicts(), [t.to_openai_tool() for t in catalog], {}))
            right += match_reply(task.expected, reply, catalog, suite.match_profile).right_tool
        shares[name] = right / len(graded)
    assert 0 < shares["name-match"] < shares["bm25-router"] < 1, shares
