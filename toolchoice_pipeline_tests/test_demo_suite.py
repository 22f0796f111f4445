"""The demo suite ``data/suites/coding_agent`` and the canary session: loaded, and checked against what issue 2
asks of them (counts are computed from the data, not restated)."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest

from toolchoice_pipeline.ingest.canary import PACKAGED_CANARY
from toolchoice_pipeline.records.calls import Reply, from_anthropic_content, make_call
from toolchoice_pipeline.scoring.matching.key_args import match_key_args
from toolchoice_pipeline.suites.matchers import parse_matcher
from toolchoice_pipeline.suites.suite import Suite, load_suite
from toolchoice_pipeline.suites.tasks import Expected, Task
from toolchoice_pipeline.suites.validate import task_problems

REPO_DATA = Path(__file__).resolve().parents[1] / "data"
SESSIONS = PACKAGED_CANARY  # the canary ships with the package
TOOLS = ["Read", "Edit", "Write", "Bash", "Grep", "Glob", "WebSearch", "WebFetch", "Task", "TodoWrite"]

# What a competent agent sends as the first call's arguments, written by hand for every task that names key
# arguments: each expectation must accept it (a typo in a regex or an over-strict value would reject it).
REFERENCE_ARGUMENTS = {
    "read-file-001": {"file_path": "src/app/main.py"},
    "read-file-002": {"file_path": "Dockerfile"},
    "read-file-003": {"file_path": "/home/dev/project/tests/test_api.py"},
    "read-file-004": {"file_path": "src/app/models.py", "offset": 120, "limit": 41},
    "read-file-005": {"file_path": ".env.example"},
    "read-file-006": {"file_path": "pyproject.toml"},
    "read-file-007": {"file_path": "logs/worker.log"},
    "edit-file-001": {
        "file_path": "src/app/config.py",
        "old_string": "DEFAULT_TIMEOUT = 30",
        "new_string": "DEFAULT_TIMEOUT = 60",
    },
    "edit-file-002": {"file_path": "README.md", "old_string": "recieve", "new_string": "receive", "replace_all": True},
    "edit-file-003": {"file_path": "src/app/worker.py", "old_string": '    print("DEBUG", job)\n', "new_string": ""},
    "edit-file-004": {
        "file_path": "src/app/views.py",
        "old_string": "usr = get_current_user()\n    return render(usr)",
        "new_string": "user = get_current_user()\n    return render(user)",
    },
    "edit-file-005": {"file_path": "requirements.txt", "old_string": "django==4.2.7", "new_string": "django==4.2.16"},
    "write-file-001": {"file_path": ".gitignore", "content": "__pycache__/\n.venv/\n.env\nbuild/\n"},
    "write-file-002": {
        "file_path": ".github/workflows/ci.yml",
        "content": "on: [push, pull_request]\n...\n- run: pytest",
    },
    "write-file-003": {"file_path": "tests/test_slugify.py", "content": "from app.text import slugify\n"},
    "write-file-005": {"file_path": "docker-compose.yml", "content": "services:\n  db:\n    image: postgres:16\n"},
    "bash-git-001": {"command": "git branch --show-current"},
    "bash-git-002": {"command": "git log --oneline -5"},
    "bash-git-003": {"command": "git checkout -b feature/login-form"},
    "bash-git-004": {"command": "git reset --soft HEAD~1"},
    "bash-git-005": {"command": "git diff"},
    "bash-file-001": {"command": "rm .git/index.lock"},
    "bash-test-001": {"command": "pytest"},
    "bash-pkg-001": {"command": "pip install requests"},
    "bash-file-002": {"command": "git mv src/app/helpers.py src/app/utils/helpers.py"},
    "bash-sys-001": {"command": "lsof -i :8000"},
    "bash-type-001": {"command": "mypy ."},
    "grep-def-001": {"pattern": "def load_settings"},
    "grep-todo-001": {"pattern": "TODO"},
    "grep-import-001": {"pattern": "^(import|from) requests"},
    "grep-call-001": {"pattern": r"send_email\("},
    "grep-env-001": {"pattern": "SENTRY_DSN"},
    "grep-url-001": {"pattern": r"https?://(localhost|127\.0\.0\.1)"},
    "grep-count-001": {"pattern": "Acme Cloud", "output_mode": "count"},
    "glob-count-001": {"pattern": "src/**/*.py"},
    "glob-list-001": {"pattern": "config/**/*.yaml"},
    "glob-find-001": {"pattern": "**/Makefile"},
    "glob-find-002": {"pattern": "**/test_*.py"},
    "glob-find-003": {"pattern": "**/*.ipynb"},
    "websearch-001": {"query": "pandas 2.2 numpy 2.0 incompatibility"},
    "websearch-002": {"query": "latest Node.js LTS version"},
    "websearch-003": {"query": "CVE-2024-3094 xz fixed version"},
    "websearch-005": {"query": "pip SSL: CERTIFICATE_VERIFY_FAILED macOS"},
    "webfetch-001": {"url": "https://peps.python.org/pep-0723/"},
    "webfetch-002": {"url": "https://github.com/pallets/flask/releases/tag/3.1.0"},
    "webfetch-003": {"url": "https://docs.stripe.com/api/refunds/create"},
    "webfetch-004": {"url": "https://www.githubstatus.com"},
    "delegate-001": {"description": "Audit SQL building", "prompt": "Audit the codebase for SQL built with f-strings"},
    "delegate-002": {"description": "Investigate flaky tests", "prompt": "Find out why tests/integration is flaky"},
    "delegate-003": {"description": "Compare rate limiters", "prompt": "Compare three Python rate-limiting libraries"},
    "followup-bash-001": {"command": "pip install pyyaml"},
    "followup-edit-001": {
        "file_path": "src/app/routes.py",
        "old_string": "status_code=500",
        "new_string": "status_code=503",
    },
    "followup-write-001": {"file_path": "scripts/largest_files.sh", "content": "... | sort -rn | head -10\n"},
    "followup-git-001": {"command": 'git add -A && git commit -m "fix ISO date parsing"'},
    "multi-cli-flag-001": {"file_path": "src/app/cli.py"},
    "multi-db-url-001": {"pattern": "DATABASE_URL"},
    "multi-migrations-001": {"pattern": "**/migrations/**/*.py"},
    "multi-fix-tests-001": {"command": "pytest -x -q"},
    "multi-httpx-001": {"query": "httpx 0.28 breaking changes"},
    "multi-version-bump-001": {"file_path": "pyproject.toml"},
    "multi-unused-001": {"pattern": "legacy_export"},
}


@pytest.fixture(scope="module")
def suite() -> Suite:
    return load_suite(REPO_DATA, "coding_agent")


def _matchers(task: Task) -> list[dict]:
    return [value for value in task.expected.arguments.values() if isinstance(value, dict)]


def test_the_suite_loads_without_problems_in_the_key_args_profile(suite):
    assert suite.name == "coding_agent"
    assert suite.match_profile == "key_args"
    assert suite.live == []
    assert re.fullmatch(r"[0-9a-f]{12}", suite.catalog_version)
    assert re.fullmatch(r"[0-9a-f]{12}", suite.fixture_version)


def test_the_catalog_has_the_ten_coding_agent_tools(suite):
    assert sorted(tool.name for tool in suite.catalog) == sorted(TOOLS)


@pytest.mark.parametrize("name", TOOLS)
def test_each_description_says_what_the_tool_is_for_and_what_it_cannot_do(suite, name):
    tool = next(t for t in suite.catalog if t.name == name)
    assert len(tool.description.split()) >= 25
    assert re.search(r"\b(cannot|not|only|nothing)\b", tool.description), tool.description
    properties = tool.parameters["properties"]
    assert properties and tool.parameters.get("required")
    for parameter, schema in properties.items():
        assert schema.get("description"), f"{name}.{parameter} has no description"


def test_web_search_says_it_knows_nothing_about_local_files(suite):
    [web] = [t for t in suite.catalog if t.name == "WebSearch"]
    assert re.search(r"knows nothing about the local files", web.description)


def test_there_are_at_least_60_tasks_every_one_tagged_with_a_stable_id(suite):
    assert len(suite.tasks) >= 60
    for task in suite.tasks:
        assert task.tags, task.id
        assert re.fullmatch(r"[a-z]+(-[a-z]+)*-\d{3}", task.id), task.id
        assert task.tools is None and task.expected is not None


def test_every_catalog_tool_is_the_expected_first_call_several_times(suite):
    counts = Counter(task.expected.tool for task in suite.tasks)
    assert {name: counts[name] >= 3 for name in TOOLS} == {name: True for name in TOOLS}, counts


def test_at_least_8_tasks_expect_no_call_and_they_carry_the_no_tool_tag(suite):
    no_call = [task for task in suite.tasks if task.expected.tool is None]
    assert len(no_call) >= 8
    assert {task.id for task in no_call} == {task.id for task in suite.tasks if "no-tool" in task.tags}
    assert all(task.expected.arguments == {} for task in no_call)


def test_at_least_6_multi_step_tasks_have_canned_results_for_the_tools_on_the_way(suite):
    multi = [task for task in suite.tasks if task.tool_results]
    assert len(multi) >= 6
    assert {task.id for task in multi} == {task.id for task in suite.tasks if "multi-step" in task.tags}
    for task in multi:
        assert len(task.tool_results) >= 2, task.id
        assert task.expected.tool in task.tool_results, task.id  # the first call gets a result to go on with
        assert all(isinstance(text, str) and text for text in task.tool_results.values())


def test_ambiguous_requests_use_any_of_and_flexible_ones_use_regex(suite):
    kinds = Counter(parse_matcher(value).kind for task in suite.tasks for value in _matchers(task))
    assert kinds["regex"] >= 30
    ambiguous = [task for task in suite.tasks if "ambiguous" in task.tags]
    assert len(ambiguous) >= 4
    assert all(any("any_of" in value for value in _matchers(task)) for task in ambiguous)


def test_follow_ups_carry_earlier_turns(suite):
    follow_ups = [task for task in suite.tasks if "follow-up" in task.tags]
    assert len(follow_ups) >= 4
    for task in follow_ups:
        roles = [message.role for message in task.messages]
        assert roles[-1] == "user" and "assistant" in roles and len(roles) >= 3, task.id


def test_every_task_with_key_arguments_has_a_reference_answer_and_no_other(suite):
    with_arguments = {task.id for task in suite.tasks if task.expected.arguments}
    assert with_arguments == set(REFERENCE_ARGUMENTS)


def _reply(tool: str, arguments: dict) -> Reply:
    return Reply(calls=[make_call(tool, arguments, "call_1")])


def test_each_expectation_accepts_its_reference_answer(suite):
    rejected = {}
    for task in suite.tasks:
        if task.expected.tool is None:
            result = match_key_args(task.expected, Reply(text="Here is the explanation."))
        else:
            result = match_key_args(task.expected, _reply(task.expected.tool, REFERENCE_ARGUMENTS.get(task.id, {})))
        if not result.right_args:
            rejected[task.id] = result.reason
    assert rejected == {}


def test_no_key_argument_expectation_is_vacuous(suite):
    """The right tool called with no arguments is never right-arguments where key arguments are named."""
    accepted = [
        task.id
        for task in suite.tasks
        if task.expected.arguments and match_key_args(task.expected, _reply(task.expected.tool, {})).right_args
    ]
    assert accepted == []


def test_a_call_where_none_is_expected_is_wrong(suite):
    for task in suite.tasks:
        if task.expected.tool is None:
            assert not match_key_args(task.expected, _reply("Bash", {"command": "ls"})).right_tool, task.id


# ---- the canary session ----


def _canary_lines() -> list[dict]:
    return [json.loads(line) for line in (SESSIONS / "canary.jsonl").read_text(encoding="utf-8").splitlines()]


def _labels() -> list[dict]:
    return [json.loads(line) for line in (SESSIONS / "canary.labels.jsonl").read_text(encoding="utf-8").splitlines()]


def test_the_canary_is_a_claude_code_transcript_of_4_user_prompts():
    lines = _canary_lines()
    entries = [line for line in lines if line.get("type") in ("user", "assistant")]
    prompts = [
        e["message"]["content"] for e in entries if e["type"] == "user" and isinstance(e["message"]["content"], str)
    ]
    assert prompts == [
        "show me src/app/main.py",
        "which git branch is this repo on?",
        "delete the stale .git/index.lock file",
        "how many Python files are in src?",
    ]
    assert {e["sessionId"] for e in entries} == {_labels()[0]["session"]}
    assert {e["cwd"] for e in entries} == {"/home/dev/project"}
    assert [e["parentUuid"] for e in entries] == [None] + [e["uuid"] for e in entries[:-1]]
    assert len({e["uuid"] for e in entries}) == len(entries)
    assert all(e["message"]["id"].startswith("msg_") for e in entries if e["type"] == "assistant")


def test_each_canary_call_is_answered_by_its_tool_result():
    entries = [line for line in _canary_lines() if line.get("type") in ("user", "assistant")]
    uses = [
        block
        for e in entries
        if e["type"] == "assistant"
        for block in e["message"]["content"]
        if block["type"] == "tool_use"
    ]
    results = [
        block
        for e in entries
        if e["type"] == "user" and isinstance(e["message"]["content"], list)
        for block in e["message"]["content"]
        if block["type"] == "tool_result"
    ]
    assert [use["name"] for use in uses] == ["Read", "WebSearch", "Read", "WebSearch"]
    assert [result["tool_use_id"] for result in results] == [use["id"] for use in uses]


def test_canary_labels_follow_the_ingest_contract_and_validate_against_the_demo_catalog(suite):
    labels = _labels()
    assert [label["turn"] for label in labels] == [0, 1, 2, 3]
    assert all(set(label) == {"session", "turn", "expected"} for label in labels)
    assert [label["expected"]["tool"] for label in labels] == ["Read", "Bash", "Bash", "Glob"]
    for label in labels:
        task = Task(
            id=f"canary-{label['turn']}",
            messages=[{"role": "user", "content": "x"}],
            expected=Expected.model_validate(label["expected"]),
        )
        assert task_problems(task, suite.catalog, "canary.labels.jsonl", label["turn"] + 1) == []


def test_the_canary_has_one_good_choice_and_three_bad_ones():
    entries = [line for line in _canary_lines() if line.get("type") == "assistant"]
    first_calls = [
        from_anthropic_content(e["message"]["content"])
        for e in entries
        if any(block["type"] == "tool_use" for block in e["message"]["content"])
    ]
    verdicts = [
        match_key_args(Expected.model_validate(label["expected"]), reply).right_args
        for label, reply in zip(_labels(), first_calls)
    ]
    assert verdicts == [True, False, False, False]


def test_the_canary_labels_load_with_the_ingest_labels_reader():
    from toolchoice_pipeline.ingest.labels import load_labels

    labels = load_labels(SESSIONS / "canary.labels.jsonl", session_optional=False)
    session = _labels()[0]["session"]
    taken = [labels.take(session, None, turn) for turn in range(4)]
    assert [expected.tool for expected, _line in taken] == ["Read", "Bash", "Bash", "Glob"]
    assert [line for _expected, line in taken] == [1, 2, 3, 4]


def test_the_fixture_version_hashed_task_by_task_is_the_short_hash_of_all_tasks_at_once():
    from toolchoice_pipeline.util.canonical import short_hash

    demo = load_suite(Path(__file__).resolve().parents[1] / "data", "coding_agent")
    odd = Task.model_validate(
        {
            "id": "aaa-ünïcode",  # sorts first; non-ASCII kept as itself in canonical JSON
            "messages": [{"role": "user", "content": "öffne «README» ✓"}],
            "expected": {"tool": "Read", "arguments": {"file_path": "README"}},
            "tools": [{"name": "Read", "description": "Read a file.", "parameters": {"type": "object"}}],
        }
    )
    for suite in (demo, Suite(spec=demo.spec, directory=demo.directory, curated=demo.curated, live=[], tasks=[])):
        for tasks in (suite.tasks, [*suite.tasks, odd]):
            suite = Suite(spec=suite.spec, directory=suite.directory, curated=suite.curated, live=[], tasks=tasks)
            whole = {
                "match_profile": suite.match_profile,
                "tasks": [t.model_dump(mode="json") for t in sorted(tasks, key=lambda t: t.id)],
            }
            assert suite.fixture_version == short_hash(whole)
