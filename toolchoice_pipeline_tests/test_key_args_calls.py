"""``key_args`` with several expected calls (``expected.calls``): matched as a set, as BFCL does."""

from toolchoice_pipeline.records.calls import FLAG_INVALID_CALL, Reply, ToolCall, make_call
from toolchoice_pipeline.scoring.matching import match_reply
from toolchoice_pipeline.scoring.matching.key_args import match_key_args
from toolchoice_pipeline.suites.tasks import Expected

PLAY = Expected(
    tool="spotify.play",
    arguments={"artist": "Taylor Swift"},
    calls=[
        {"tool": "spotify.play", "arguments": {"artist": "Taylor Swift", "duration": 20}},
        {"tool": "spotify.play", "arguments": {"artist": "Maroon 5", "duration": {"any_of": [15, 900]}}},
    ],
)


def reply(*calls) -> Reply:
    return Reply(calls=[make_call(name, arguments) for name, arguments in calls])


SWIFT = ("spotify.play", {"artist": "Taylor Swift", "duration": 20})
MAROON = ("spotify.play", {"artist": "Maroon 5", "duration": 15})


def test_a_complete_reply_matches_in_any_order():
    for calls in ((SWIFT, MAROON), (MAROON, SWIFT)):
        result = match_key_args(PLAY, reply(*calls))
        assert (result.right_tool, result.right_args) == (True, True), result.reason


def test_a_reply_missing_a_call_or_with_an_extra_one_is_not_the_right_tool():
    missing = match_key_args(PLAY, reply(SWIFT))
    assert (missing.right_tool, missing.right_args) == (False, False)
    assert "expected ['spotify.play', 'spotify.play']" in missing.reason
    extra = match_key_args(PLAY, reply(SWIFT, MAROON, ("Read", {"file_path": "x"})))
    assert (extra.right_tool, extra.right_args) == (False, False)


def test_each_call_is_paired_once():
    twice = match_key_args(PLAY, reply(SWIFT, SWIFT))
    assert (twice.right_tool, twice.right_args) == (True, False)
    assert "expected call 2 (spotify.play) matched no call" in twice.reason


def test_key_arguments_only_and_matchers_apply_to_each_call():
    loose = reply(("spotify.play", {"artist": "Maroon 5", "duration": 900, "shuffle": True}), SWIFT)
    assert match_key_args(PLAY, loose).right_args
    wrong = reply(("spotify.play", {"artist": "Maroon 5", "duration": 14}), SWIFT)
    assert (match_key_args(PLAY, wrong).right_tool, match_key_args(PLAY, wrong).right_args) == (True, False)


def test_a_call_written_in_the_text_or_undecodable_arguments_fail_the_set():
    written = Reply(calls=[make_call(*SWIFT), ToolCall(name="spotify.play", arguments=None, flags=[FLAG_INVALID_CALL])])
    assert not match_key_args(PLAY, written).right_tool
    undecodable = Reply(calls=[make_call(*SWIFT), make_call("spotify.play", "{not json")])
    result = match_key_args(PLAY, undecodable)
    assert (result.right_tool, result.right_args) == (True, False)


def test_a_single_expected_call_keeps_first_call_semantics():
    one = Expected(tool="Read", arguments={}, calls=[{"tool": "Read", "arguments": {"file_path": "a.py"}}])
    first = match_key_args(one, reply(("Read", {"file_path": "a.py"}), ("Grep", {"pattern": "x"})))
    assert (first.right_tool, first.right_args) == (True, True)
    second = match_key_args(one, reply(("Grep", {"pattern": "x"}), ("Read", {"file_path": "a.py"})))
    assert not second.right_tool
    wrong_args = match_key_args(one, reply(("Read", {"file_path": "b.py"})))
    assert (wrong_args.right_tool, wrong_args.right_args) == (True, False)


def test_the_profile_entry_point_uses_the_set_rule():
    assert match_reply(PLAY, reply(MAROON, SWIFT), [], "key_args").right_args
