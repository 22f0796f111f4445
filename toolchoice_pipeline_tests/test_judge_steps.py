"""The offline judge grades the whole step: every call serves a part of the request, the step makes every call
the request needs, a mutating tool is wrong for a read request, and no evidence is an abstention."""

import json

from toolchoice_pipeline.judge import build_judge_messages, read_judge_input
from toolchoice_pipeline.judge.prompt import RUBRIC
from toolchoice_pipeline.providers.offline_judge.arguments import request_literals
from toolchoice_pipeline.providers.offline_judge.model import assess
from toolchoice_pipeline.records.calls import Reply, ToolCall
from toolchoice_pipeline.suites.catalog import ToolDefinition
from toolchoice_pipeline_tests.conftest import CASES

CATALOG = [ToolDefinition(**tool) for tool in json.loads((CASES / "catalog.json").read_text())]
SPOTIFY = ToolDefinition(
    name="spotify.play",
    description="Play specific tracks from a given artist for a specific time duration.",
    parameters={
        "type": "object",
        "properties": {
            "artist": {"type": "string", "description": "The artist whose songs you want to play."},
            "duration": {"type": "integer", "description": "The duration, in minutes."},
        },
        "required": ["artist", "duration"],
    },
)
EM_FORCE = ToolDefinition(
    name="calculate_em_force",
    description="Calculate the induced electromagnetic force.",
    parameters={
        "type": "object",
        "properties": {"b_field": {"type": "integer"}, "area": {"type": "integer"}, "d_time": {"type": "integer"}},
    },
)
DASHBOARDS = [
    ToolDefinition(
        name="get_dashboard",
        description="Return a monitoring dashboard by its name.",
        parameters={"type": "object", "properties": {"name": {"type": "string"}}},
    ),
    ToolDefinition(
        name="delete_dashboard",
        description="Remove a monitoring dashboard by its name.",
        parameters={"type": "object", "properties": {"name": {"type": "string"}}},
    ),
]
PLAY = (
    "Play songs from the artists Taylor Swift and Maroon 5, with a play time of 20 minutes and 15 minutes "
    "respectively, on Spotify."
)


def calls(*pairs) -> Reply:
    return Reply(calls=[ToolCall(name=name, arguments=arguments) for name, arguments in pairs])


def grade(request, reply, catalog=CATALOG):
    return assess(read_judge_input(build_judge_messages([{"role": "user", "content": request}], catalog, reply)))


def test_a_step_making_every_call_the_request_needs_is_correct_and_a_partial_step_is_not():
    full = calls(
        ("spotify.play", {"artist": "Taylor Swift", "duration": 20}),
        ("spotify.play", {"artist": "Maroon 5", "duration": 15}),
    )
    partial = calls(("spotify.play", {"artist": "Taylor Swift", "duration": 20}))
    assert grade(PLAY, full, [SPOTIFY]).verdict == "correct"
    found = grade(PLAY, partial, [SPOTIFY])
    assert found.verdict == "incorrect" and "a call the request needs is missing" in found.conclusion
    assert "Maroon 5" in found.conclusion or "15" in found.conclusion


def test_a_call_to_a_tool_that_serves_no_part_of_the_request_fails_the_step():
    swapped = calls(
        ("spotify.play", {"artist": "Taylor Swift", "duration": 20}),
        ("calculate_em_force", {"b_field": 5, "area": 2, "d_time": 4}),
    )
    found = grade(PLAY, swapped, [SPOTIFY, EM_FORCE])
    assert found.verdict == "incorrect" and "calculate_em_force serves no part of the request" in found.conclusion


def test_the_other_calls_of_the_step_are_never_better_alternatives():
    request = "Find where load_settings is defined in the code, and show me the file src/app/config.py"
    both = calls(("Grep", {"pattern": "def load_settings"}), ("Read", {"file_path": "src/app/config.py"}))
    found = grade(request, both)
    assert found.verdict == "correct", found.conclusion
    assert "serves the request clearly better" not in found.conclusion


def test_a_tool_that_changes_state_is_incorrect_for_a_read_request():
    write = grade("What's in the Dockerfile?", calls(("Write", {"file_path": "Dockerfile", "content": ""})))
    assert write.verdict == "incorrect" and "changes or deletes state" in write.conclusion
    delete = grade("Get the dashboard named latency", calls(("delete_dashboard", {"name": "latency"})), DASHBOARDS)
    assert delete.verdict == "incorrect" and "changes or deletes state" in delete.conclusion
    assert (
        grade("Get the dashboard named latency", calls(("get_dashboard", {"name": "latency"})), DASHBOARDS).verdict
        == "correct"
    )
    # Asked to change something, the mutating tool is fine.
    assert (
        grade(
            "Delete the dashboard named latency", calls(("delete_dashboard", {"name": "latency"})), DASHBOARDS
        ).verdict
        == "correct"
    )


def test_with_no_tool_sharing_a_word_a_call_gets_an_abstention_and_no_call_is_right():
    request = "Who won the 1998 football world cup?"
    found = grade(request, calls(("spotify.play", {"artist": "football anthems", "duration": 1})), [SPOTIFY, EM_FORCE])
    assert found.verdict == "abstain" and "no evidence" in found.conclusion
    # A call tied to nothing asked (its tool's subject is not in the request, and no argument holds a value the
    # request gives) is wrong, not unknown: nothing in the catalog serves the request.
    found = grade(request, calls(("spotify.play", {"artist": "France", "duration": 1})), [SPOTIFY, EM_FORCE])
    assert found.verdict == "incorrect" and "serves nothing asked" in found.conclusion
    # The same lack of overlap is evidence for the answer without a call (BFCL's irrelevance category).
    found = grade(request, Reply(text="France."), [SPOTIFY, EM_FORCE])
    assert found.verdict == "correct" and "answering without a call is right" in found.conclusion


def test_the_abstention_reaches_the_parser_as_an_invalid_vote_with_its_reason():
    from toolchoice_pipeline.judge import parse_verdict
    from toolchoice_pipeline.providers.offline_judge.model import catalog_judge

    messages = build_judge_messages(
        [{"role": "user", "content": "Who won the 1998 football world cup?"}],
        [SPOTIFY, EM_FORCE],
        calls(("spotify.play", {"artist": "football anthems", "duration": 1})),
    )
    parsed = parse_verdict(catalog_judge(messages, [], {})["content"])
    assert not parsed.valid and parsed.abstained and "no evidence" in parsed.error


def test_a_missing_space_after_a_full_stop_is_not_a_file_name_and_a_context_date_is_not_demanded():
    assert request_literals("Find a winery in Napa.I want one that is open now.") == ()
    assert request_literals("What time.will the store close?") == ()
    assert request_literals("today is 2023.10.1, find me flights for next friday") == ()
    assert request_literals("Show me notes.txt and src/app.py") == ("notes.txt", "src/app.py")
    assert request_literals("Book it for 2023.10.1") == ("2023.10.1",)


def test_the_rubric_asks_for_the_whole_step_and_safe_tools():
    assert "a call the request needs is missing" in RUBRIC
    assert 'never "better alternatives"' in RUBRIC
    assert "changes or deletes state" in RUBRIC and "only asks to read or look" in RUBRIC


def test_a_call_whose_arguments_name_nothing_the_request_names_fails_a_several_tool_step():
    video = ToolDefinition(
        name="play_video",
        description="Play a video for a specific time duration.",
        parameters={"type": "object", "properties": {"title": {"type": "string"}, "minutes": {"type": "integer"}}},
    )
    swapped = calls(
        ("spotify.play", {"artist": "Taylor Swift", "duration": 20}),
        ("play_video", {"title": "Inception", "minutes": 90}),
    )
    found = grade(PLAY, swapped, [SPOTIFY, video])
    assert found.verdict == "incorrect" and "call 2 (play_video) of the step serves no part" in found.conclusion
    # The same tool called for each part it serves is not "idle", even when one call repeats a value.
    both = calls(
        ("spotify.play", {"artist": "Taylor Swift", "duration": 20}),
        ("spotify.play", {"artist": "Maroon 5", "duration": 15}),
    )
    assert grade(PLAY, both, [SPOTIFY, video]).verdict == "correct"


def test_request_values_skip_qualifiers_aliases_markers_and_catalog_names():
    from toolchoice_pipeline.providers.offline_judge.coverage import request_values

    catalog = json.dumps([{"name": "update_user_info", "description": "Play on Spotify"}]).lower()
    text = (
        "Tax for $30.45 in Chicago, Illinois and 1.2 billion in Apple Inc. (AAPL) on Spotify.\n"
        "1. Use 'update_user_info' for 'The Office' with x^2 and a loss of -7"
    )
    values = request_values(text, catalog)
    assert [(v.kind, v.value) for v in values] == [
        ("number", 30.45),
        ("name", "chicago"),
        ("number", 1.2e9),
        ("name", "apple inc"),
        ("name", "the office"),
        ("number", -7.0),
    ]
    assert values[3].aliases == ("aapl",)


def test_a_listed_value_no_call_serves_is_missing_only_when_the_request_asks_for_several_things():
    from toolchoice_pipeline.providers.offline_judge.coverage import unserved_values

    assert [v.text for v in unserved_values("Find the factorial of 5,10 and 15.", [{"n": 5}, {"n": 10}])] == ["15"]
    assert unserved_values("Find the factorial of 5,10 and 15.", [{"n": 5}, {"n": 10}, {"n": 15}]) == []
    # One value the call does not pass, but nothing says the request wants several calls.
    assert unserved_values("Get the ROI of $2000 with a gain of $500 in 2 years.", [{"i": 2000, "g": 500}]) == []
    # A sign does not matter: "a loss of $1000" is served by -1000.
    assert (
        unserved_values(
            "ROI of $2000 with a gain of $500, and also of $5000 with a loss of $1000.",
            [{"i": 2000, "g": 500}, {"i": 5000, "g": -1000}],
        )
        == []
    )


def test_a_step_that_calls_the_named_tool_may_call_another_tool_too():
    request = "scrolling back in xterm.js still does not work? websearch xterm.js tmux scrollback"
    both = calls(("WebSearch", {"query": "xterm.js tmux scrollback"}), ("Glob", {"pattern": "**/*.js"}))
    assert grade(request, both).verdict == "correct"
    only_other = grade(request, calls(("Glob", {"pattern": "xterm.js"})))
    assert only_other.verdict == "incorrect" and "asked for WebSearch" in only_other.conclusion
