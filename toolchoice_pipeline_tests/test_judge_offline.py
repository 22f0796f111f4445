"""The offline judge ``local/catalog-judge``: catalog-grounded verdicts, step-by-step reasoning, through LiteLLM."""

import asyncio
import json

import pytest

from toolchoice_pipeline.judge import JudgeItem, build_judge_messages, judge_items, parse_verdict, read_judge_input
from toolchoice_pipeline.providers import register_providers
from toolchoice_pipeline.providers.offline_judge.arguments import names_literal, numbers
from toolchoice_pipeline.providers.offline_judge.fit import capabilities, terms
from toolchoice_pipeline.providers.offline_judge.mentions import tool_mentions
from toolchoice_pipeline.providers.offline_judge.model import assess, catalog_judge
from toolchoice_pipeline.records.calls import FLAG_INVALID_CALL, Reply, ToolCall
from toolchoice_pipeline.suites.catalog import ToolDefinition
from toolchoice_pipeline.suites.config import JudgeConfig, RetryConfig
from toolchoice_pipeline_tests.conftest import CASES

CATALOG = [ToolDefinition(**tool) for tool in json.loads((CASES / "catalog.json").read_text())]
NAMES_ONLY = [
    ToolDefinition(
        name=t.name,
        parameters={
            "type": "object",
            "properties": {
                key: {k: v for k, v in prop.items() if k != "description"}
                for key, prop in t.parameters["properties"].items()
            },
            "required": t.parameters.get("required", []),
        },
    )
    for t in CATALOG
]


def call(name, **arguments) -> Reply:
    return Reply(calls=[ToolCall(name=name, arguments=arguments)])


def verdict(request, reply, catalog=CATALOG, earlier=()):
    conversation = [*earlier, {"role": "user", "content": request}]
    return assess(read_judge_input(build_judge_messages(conversation, catalog, reply)))


@pytest.mark.parametrize(
    "request_text, reply, want",
    [
        ("Show me src/server.py", call("Read", file_path="src/server.py"), "correct"),
        ("Which git branch is this repo on?", call("Bash", command="git branch --show-current"), "correct"),
        ("Which git branch is this repo on?", call("WebSearch", query="which git branch"), "incorrect"),
        ("Delete the stale lock file .git/index.lock", call("Bash", command="rm .git/index.lock"), "correct"),
        ("Delete the stale lock file .git/index.lock", call("Read", file_path=".git/index.lock"), "incorrect"),
        ("How many Python files are in src?", call("Glob", pattern="src/**/*.py"), "correct"),
        ("List the Python files in src", call("WebSearch", query="python files"), "incorrect"),
    ],
)
def test_catalog_grounded_verdicts(request_text, reply, want):
    assert verdict(request_text, reply).verdict == want


def test_a_tool_outside_the_catalog_is_incorrect():
    found = verdict("Show me src/server.py", call("cat_file", path="src/server.py"))
    assert found.verdict == "incorrect" and "cat_file is not a tool in the catalog" in found.conclusion


def test_arguments_failing_the_json_schema_are_incorrect():
    found = verdict("Show me src/server.py", call("Read", path="src/server.py"))
    assert found.verdict == "incorrect" and "'file_path' is a required property" in found.conclusion


def test_a_call_written_in_text_is_incorrect():
    reply = Reply(
        text='<tool_call>{"name": "Read"',
        calls=[ToolCall(name="Read", raw_arguments='{"name": "Read"', flags=[FLAG_INVALID_CALL])],
    )
    assert verdict("Show me src/server.py", reply).verdict == "incorrect"


def test_arguments_about_something_else_than_the_named_file_are_incorrect():
    assert verdict("Show me src/server.py", call("Read", file_path="README.md")).verdict == "incorrect"


def test_no_call_is_wrong_when_a_tool_clearly_fitted_and_right_on_chat_no_tool_shares_a_word_with():
    assert verdict("Which git branch is this repo on?", Reply(text="main, probably.")).verdict == "incorrect"
    # No tool shares a word with a thank-you: evidence that no tool serves it, so answering without a call is right.
    found = verdict("thanks, that fixed it!", Reply(text="Glad to help."))
    assert found.verdict == "correct" and "no tool serves it" in found.conclusion


def test_a_follow_up_is_judged_with_the_earlier_turn():
    earlier = [
        {"role": "user", "content": "The build leaves a stale lock file behind."},
        {"role": "assistant", "content": "Shall I delete the stale lock file?"},
    ]
    assert verdict("yes, do it", call("Read", file_path="x.lock"), earlier=earlier).verdict == "incorrect"
    assert verdict("yes, do it", call("Bash", command="rm x.lock"), earlier=earlier).verdict == "correct"


def test_negated_capabilities_are_read_from_descriptions():
    read = capabilities(
        "Read", "Show the contents of one local file. Read-only: cannot create, change or delete anything."
    )
    assert terms("show")[0] in read.positive and terms("delete")[0] not in read.positive
    hit = [d for d in read.denials if d.hit_by(set(terms("delete the file")))]
    assert hit
    web = capabilities(
        "WebSearch",
        "Search the PUBLIC internet. Knows nothing about local files, this repository or the machine's state.",
    )
    assert not web.positive & set(terms("local files repository state"))
    assert [d for d in web.denials if d.hit_by(set(terms("list the local files")))]


def test_names_only_catalog_gives_no_grounds_to_object():
    found = verdict(
        "Delete the stale lock file .git/index.lock", call("Read", file_path=".git/index.lock"), catalog=NAMES_ONLY
    )
    assert found.verdict == "correct" and "nothing to object to" in found.conclusion


def test_reasoning_goes_step_by_step_and_the_answer_is_the_structured_json():
    messages = build_judge_messages(
        [{"role": "user", "content": "Which git branch is this repo on?"}],
        CATALOG,
        call("WebSearch", query="git branch"),
    )
    parsed = parse_verdict(catalog_judge(messages, [], {})["content"])
    assert parsed.verdict == "incorrect"
    lines = parsed.reasoning.splitlines()
    assert [line.split(",")[0] for line in lines[:4]] == ["Step 1", "Step 2", "Step 3", "Step 4"]
    assert "Bash" in lines[1] and "WebSearch" in lines[2] and lines[4].startswith("Verdict: incorrect")


def test_wording_varies_by_seed_only_above_temperature_zero_and_the_verdict_never_does():
    messages = build_judge_messages(
        [{"role": "user", "content": "Delete .git/index.lock"}], CATALOG, call("Read", file_path=".git/index.lock")
    )
    hot = [json.loads(catalog_judge(messages, [], {"temperature": 0.7, "seed": s})["content"]) for s in range(12)]
    cold = [json.loads(catalog_judge(messages, [], {"temperature": 0, "seed": s})["content"]) for s in range(12)]
    assert len({answer["reasoning"] for answer in hot}) > 1
    assert len({answer["reasoning"] for answer in cold}) == 1
    assert {answer["verdict"] for answer in hot + cold} == {"incorrect"}


def test_an_input_that_is_not_a_judge_prompt_gets_an_unparseable_refusal():
    answer = catalog_judge([{"role": "user", "content": "Reply with the word OK."}], [], {})
    assert not parse_verdict(answer["content"]).valid


def test_through_litellm_the_local_judge_gives_three_valid_votes():
    register_providers()
    item = JudgeItem(
        model="m",
        task_id="t",
        conversation=[{"role": "user", "content": "Delete .git/index.lock"}],
        catalog=CATALOG,
        reply=call("Read", file_path=".git/index.lock"),
    )
    votes = asyncio.run(judge_items([item], JudgeConfig(), retries=RetryConfig(max_attempts=1)))
    assert [(v.valid, v.verdict, v.judge_model) for v in votes] == [(True, "incorrect", "local/catalog-judge")] * 3
    assert all(v.cost_usd == 0.0 and v.prompt_tokens > 0 for v in votes)


# --- faults found in end-to-end runs (real sessions, BFCL gold replay): one small catalog each ---------------


def tool(name, description, properties=None, required=(), closed=True):
    schema = {"type": "object", "properties": properties or {}, "required": list(required)}
    if closed:
        schema["additionalProperties"] = False
    return ToolDefinition(name=name, description=description, parameters=schema)


TEXT = {"type": "string"}
NAMING_CATALOG = [
    tool(
        "Read",
        "Return the text of one local file. It cannot change or delete files.",
        {"file_path": TEXT},
        ["file_path"],
    ),
    tool(
        "Task",
        "Hand a piece of work to a helper agent that has the same tools and reports back when done.",
        {"prompt": TEXT},
        ["prompt"],
    ),
    tool(
        "WebSearch",
        "Search the public internet for pages. It knows nothing about the local files.",
        {"query": TEXT},
        ["query"],
    ),
    tool("Bash", "Run a shell command: tests, builds, deleting files.", {"command": TEXT}, ["command"]),
]


def test_a_tool_the_user_names_counts_as_an_instruction():
    # Task's description shares "back" and "tools" with the request, Read only "read": by words alone Task wins.
    request = "can you read it back with the Read tool?"
    named = verdict(request, call("Read", file_path="notes.txt"), NAMING_CATALOG)
    assert named.verdict == "correct" and "asked for Read" in named.conclusion
    assert verdict(request, call("Task", prompt="read notes.txt back"), NAMING_CATALOG).verdict == "incorrect"
    assert verdict(request, Reply(text="Sure."), NAMING_CATALOG).verdict == "incorrect"
    # By its exact name, any case, with no marker: a multi-token name is no ordinary word.
    search = "scrolling back still does not work in the embedded terminal, websearch terminal scroll events"
    assert verdict(search, call("WebSearch", query="terminal scroll events"), NAMING_CATALOG).verdict == "correct"
    assert verdict(search, call("Task", prompt="find out why"), NAMING_CATALOG).verdict == "incorrect"


def test_naming_a_tool_does_not_override_what_its_description_denies_or_what_the_user_rules_out():
    denied = verdict("delete the stale notes file with the Read tool", call("Read", file_path="notes"), NAMING_CATALOG)
    assert denied.verdict == "incorrect" and "rules out" in denied.conclusion
    assert (
        verdict(
            "delete the stale notes file with the Read tool", call("Bash", command="rm notes"), NAMING_CATALOG
        ).verdict
        == "correct"
    )
    ruled_out = verdict(
        "don't use the Bash tool for this, show me what the notes file says",
        call("Bash", command="cat notes"),
        NAMING_CATALOG,
    )
    assert ruled_out.verdict == "incorrect" and "ruled out Bash" in ruled_out.conclusion


def test_an_ordinary_word_that_is_also_a_tool_name_is_not_an_instruction():
    mentions = tool_mentions("read the notes file, then search the web", [t.name for t in NAMING_CATALOG])
    assert mentions == []
    found = tool_mentions("do a web search, then use `Read` or the tool Task", [t.name for t in NAMING_CATALOG])
    assert [(m.tool, m.negated) for m in found] == [("WebSearch", False), ("Read", False), ("Task", False)]
    # A dotted tool name is the tool's, not a file name; words of a multi-token name are no instruction unmarked.
    dotted = tool_mentions("Invoke the 'random_forest.train' function twice", ["random_forest.train"])
    assert [m.tool for m in dotted] == ["random_forest.train"]
    assert tool_mentions("Train a random forest on the data", ["random_forest.train"]) == []


CONDITIONAL_CATALOG = [
    tool(
        "forest_growth_forecast",
        "Predicts the forest growth over the next N years.",
        {
            "location": TEXT,
            "years": {"type": "integer"},
            "include_human_impact": {
                "type": "boolean",
                "description": "Whether or not to include the impact of human "
                "activities in the forecast. If not provided, defaults to false.",
            },
        },
        ["location", "years"],
        closed=False,
    ),
    tool(
        "get_weather",
        "Current weather for a city. It cannot forecast forest growth or human impact.",
        {"city": TEXT},
        ["city"],
        closed=False,
    ),
]


def test_conditions_and_defaults_in_a_description_are_not_denials():
    request = "Predict the growth of forest in Yellowstone for the next 5 years including human impact."
    good = call("forest_growth_forecast", location="Yellowstone", years=5, include_human_impact=True)
    found = verdict(request, good, CONDITIONAL_CATALOG)
    assert found.verdict == "correct" and "human" in found.conclusion
    # A real denial still counts ("cannot forecast forest growth").
    assert verdict(request, call("get_weather", city="Yellowstone"), CONDITIONAL_CATALOG).verdict == "incorrect"
    caps = capabilities(
        "t",
        "If the file does not exist, it is created. If not provided, defaults to 10. Whether "
        "or not to sort. It searches inside files, not file names. Not for quick lookups. It "
        "never deletes anything. The helper does not see this conversation.",
    )
    assert sorted(sorted(d.terms) for d in caps.denials) == [
        ["convers", "see"],
        ["delet"],
        ["file", "name"],
        ["lookup", "quick"],
    ]


DATE_CATALOG = [
    tool(
        "air_quality",
        "Retrieve the air quality index for a location on a date.",
        {"location": TEXT, "date": {"type": "string", "description": "The date (month-day-year)."}},
        ["location", "date"],
    ),
    tool(
        "get_best_sushi_places",
        "Returns the best sushi places given the city, review rate and top number.",
        {"city": TEXT, "top": {"type": "integer"}, "review_rate": {"type": "number"}},
        ["city", "top"],
    ),
    tool(
        "paint_requirement",
        "Calculate the gallons of paint required for a wall.",
        {"width": {"type": "integer"}, "height": {"type": "integer"}, "coverage": {"type": "integer"}, "unit": TEXT},
        ["width", "height", "coverage"],
    ),
]


@pytest.mark.parametrize(
    "request_text, reply, want",
    [
        (
            "What is the air quality index in London on 2022/08/16?",
            call("air_quality", location="London", date="08-16-2022"),
            "correct",
        ),
        (
            "What is the air quality index in London on 2022/08/16?",
            call("air_quality", location="London", date="August 16, 2022"),
            "correct",
        ),
        (
            "What is the air quality index in London on 2022/08/16?",
            call("air_quality", location="London", date="2021-01-01"),
            "incorrect",
        ),
        (
            "Top five sushi restaurants in Tokyo rated above 4/5?",
            call("get_best_sushi_places", city="Tokyo", top=5, review_rate=4.0),
            "correct",
        ),
        (
            "Top five sushi restaurants in Tokyo rated above 4/5?",
            call("get_best_sushi_places", city="Tokyo", top=5, review_rate=3.0),
            "incorrect",
        ),
        (
            "How much paint for a wall 20ft wide and 12ft high, if a gallon covers 350 sq.ft?",
            call("paint_requirement", width=20, height=12, coverage=350, unit="feet"),
            "correct",
        ),
    ],
)
def test_values_in_the_request_match_reformatted_arguments_by_value(request_text, reply, want):
    assert verdict(request_text, reply, DATE_CATALOG).verdict == want


def test_numbers_compare_by_value_whatever_their_format():
    assert names_literal({"date": "16.08.2022"}, "2022/08/16")
    assert names_literal({"year": 2022, "month": 8, "day": 16}, "2022/08/16")
    assert names_literal({"rate": 0.8}, "4/5") and not names_literal({"rate": 5}, "4/5")
    assert names_literal({"old": "django==4.2.7"}, "4.2.7") and not names_literal({"old": "django==4.2.6"}, "4.2.7")
    assert numbers({"amount": "$1,000", "flag": True}) >= {1000.0} and 1.0 not in numbers({"flag": True})
    assert names_literal({"open_until": 22}, "22:00") and names_literal({"time": "7:30 pm"}, "19:30")
    assert not names_literal({"time": "8:30 pm"}, "19:30")


def test_what_the_user_named_may_be_the_job_of_a_later_call_of_the_step():
    catalog = [
        tool(
            "find_movie_showing",
            "Find theatres showing a movie at a time.",
            {"movie": TEXT, "time": TEXT},
            ["movie", "time"],
        )
    ]
    request = "Find theatres with Tenet at 5 pm and No Time To Die at 7:30 pm."
    both = Reply(
        calls=[
            ToolCall(name="find_movie_showing", arguments={"movie": "Tenet", "time": "5 pm"}),
            ToolCall(name="find_movie_showing", arguments={"movie": "No Time To Die", "time": "7:30 pm"}),
        ]
    )
    assert verdict(request, both, catalog).verdict == "correct"
    assert verdict(request, call("find_movie_showing", movie="Tenet", time="5 pm"), catalog).verdict == "incorrect"


SHELL = {"command": TEXT, "description": TEXT}


def test_an_undeclared_extra_argument_fails_the_call_but_the_reasoning_says_the_tool_was_right():
    closed = [
        tool("Bash", "Run a shell command: start servers, tests, builds.", SHELL, ["command"]),
        tool("Read", "Return the text of one local file.", {"file_path": TEXT}, ["file_path"]),
    ]
    reply = call("Bash", command="mix phx.server", run_in_background=True)
    found = verdict("run the phoenix server in the background", reply, closed)
    assert found.verdict == "incorrect"
    assert found.conclusion.startswith("the tool is right (Bash")
    assert '"run_in_background", which its parameter schema does not declare' in found.conclusion
    # A schema that does not close the object allows the extra argument: the same call is correct.
    open_ = [
        tool("Bash", "Run a shell command: start servers, tests, builds.", SHELL, ["command"], closed=False),
        closed[1],
    ]
    assert verdict("run the phoenix server in the background", reply, open_).verdict == "correct"
    # Any other schema failure (a missing required argument) is reported as it is, not as a right tool.
    missing = verdict("run the phoenix server in the background", call("Bash", description="start"), closed)
    assert missing.verdict == "incorrect" and "'command' is a required property" in missing.conclusion
    assert "the tool is right" not in missing.conclusion


def test_a_tool_whose_own_schema_is_invalid_fails_the_call_and_a_fixed_schema_is_checked_afresh():
    def read_tool(kind: str) -> list[ToolDefinition]:
        return [
            ToolDefinition(
                name="Read",
                description="Return the text of one local file.",
                parameters={"type": "object", "properties": {"file_path": {"type": kind}}, "required": ["file_path"]},
            )
        ]

    reply = call("Read", file_path="src/server.py")
    for _ in range(2):  # the second time from the judge's memory of the schema check
        broken = verdict("Show me src/server.py", reply, read_tool("text"))
        assert broken.verdict == "incorrect"
        assert (
            "the tool's parameter schema is itself invalid ('text' is not valid under any of the given "
            "schemas)" in broken.conclusion
        )
    assert verdict("Show me src/server.py", reply, read_tool("string")).verdict == "correct"


WEB = [
    ToolDefinition(
        name="WebSearch",
        description="Search the public internet: library documentation, release notes, security advisories.",
        parameters={"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]},
    ),
    ToolDefinition(
        name="WebFetch",
        description="Download one public web page and return its text.",
        parameters={
            "type": "object",
            "properties": {"url": {"type": "string", "format": "uri", "description": "Full URL of the page."}},
            "required": ["url"],
        },
    ),
]


def test_a_url_the_request_gives_is_acted_on_only_by_a_tool_that_takes_a_url():
    request = "Here are the release notes: https://example.org/v3/changes . Anything in there that breaks us?"
    assert verdict(request, call("WebFetch", url="https://example.org/v3/changes"), WEB).verdict == "correct"
    found = verdict(request, call("WebSearch", query="https://example.org/v3/changes"), WEB)
    assert found.verdict == "incorrect" and "WebSearch has no parameter for a URL" in found.conclusion
    # Without a URL to act on, the words decide as before.
    search = call("WebSearch", query="flask 3.1 release notes")
    assert verdict("Find the release notes of flask 3.1", search, WEB).verdict == "correct"
