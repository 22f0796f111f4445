"""End to end: no secret from an ingested session survives anywhere the pipeline stores or prints things.

Recorded Claude Code sessions with planted secrets of 47 kinds (the :func:`planted_secrets` of
``test_sanitise``: AWS key id and secret key, GitHub, Anthropic, OpenAI, Slack, Google, Stripe and SendGrid
keys, a JWT, bearer and basic-auth headers, a password in a URL, a private key block, a password assignment,
an e-mail address, the user name in ``/home/<user>`` and ``C:\\Users\\<user>`` paths and in ``cwd``, and the
current formats of :func:`newer_planted_secrets`: Hugging Face, Google OAuth, Databricks, DigitalOcean, Vault,
Atlassian, Grafana, npm, PyPI, Shopify and 18 more services, a token as a URL's userinfo, ``mysql -p``, a
``.netrc`` password and a service account's ``private_key_id``) are
ingested with ``toolchoice ingest claude-code`` and run through ``toolchoice run`` (real subprocesses, the
offline local judge on), with fake provider keys in the environment. Then every place the pipeline writes is
read back *structurally* (Parquet and DuckDB compress, SQLite keeps zlib-compressed Dagster snapshots) and as
raw bytes, and no secret, nor a recognisable fragment of one, may be found:

- every Parquet file (warehouse tables, the staged stage outputs, schema files): every cell and the schema
  metadata, as text;
- the DuckDB file: every table and view, every column cast to text, and the views' SQL;
- the call journal and Dagster's instance (event log, run storage, schedules, indexes): every SQLite file,
  every table and column, with compressed blobs inflated; Dagster's compute log files;
- every file under ``releases/`` and the suite the ingest wrote;
- the stdout and stderr of ``ingest``, ``run`` and ``gate``;
- the raw bytes of every file under the data directory.

The secrets sit in prompts, assistant text (over several lines of one message), ``tool_use`` inputs (values,
nested values and object keys), ``tool_result`` contents (string and block list), a compaction summary, a
subagent's file, a bookkeeping line, a truncated line, ``cwd``, the transcript's own path and an MCP server
name. The scanners are checked on a compressed Parquet file and a zlib blob holding a needle, so they can fail.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from toolchoice_pipeline.ingest.pipeline import IngestOptions, ingest_claude_code
from toolchoice_pipeline.util.sanitise import Sanitiser
from toolchoice_pipeline_tests.conftest import DATA
from toolchoice_pipeline_tests.test_sanitise import planted_secrets, write_transcript_with_secrets

SUITE = "secrets_e2e"
RELEASE = "r-secrets"
USER = "plantedalice"
SESSION = "7e1f0000-0000-4000-8000-00000000abcd"
AGENT = "a9c3f0e1"
MCP_TOOL = f"mcp__{USER}_vault__put"
# Fake provider keys in the environment of every command: they must never be written or printed.
ENV_KEYS = {
    "OPENAI_API_KEY": "sk-" + "proj-" + "EnvOnlyOpenAIkeyBody" + "x7Q2" * 5,
    "ANTHROPIC_API_KEY": "sk-" + "ant-api03-" + "EnvOnlyAnthropicBody" + "k9W4" * 5,
}


# --- what must not survive ---------------------------------------------------------------------------------


def needles() -> list[str]:
    """Each planted secret's value, plus fragments that would still identify one: the bodies after the
    well-known prefixes and the decoded contents of the base64 ones (JWT claims, basic-auth credentials)."""
    fragments = [
        "Q7ZXZXZXZX",
        "AbCdEfGhIjKlMnOp",
        "112233445566-778899001122",
        "plantedCurlPw",
        "planted-admin",
        "planted-pw-9731",
        "planted-user-42",
        "plantedSignature",
    ]
    return [s.needle for s in planted_secrets()] + fragments


def env_needles() -> list[str]:
    return [*ENV_KEYS.values(), "EnvOnlyOpenAIkeyBody", "EnvOnlyAnthropicBody"]


# Every planted secret, fragment and user name holds "planted" (in any case) except the ones that start with a
# fixed prefix (AKIA..., ghp_..., AIza..., eyJ...), whose bodies are in needles(); nothing else we write does, so
# any "planted" found is a leak. The fake environment keys are looked for as such.
MARKER = "planted"


def found_in(text: str, wanted: list[str], *, marker: bool = True) -> list[str]:
    """The needles of ``wanted`` in ``text``, and the text around ``MARKER`` (any case) when ``marker``."""
    found = [needle for needle in wanted if needle in text]
    start = text.lower().find(MARKER) if marker else -1
    if start >= 0:
        found.append(f"...{text[max(0, start - 40) : start + 40]}...")
    return found


# --- the sessions --------------------------------------------------------------------------------------------


def write_session(path: Path, *, session: str = SESSION) -> None:
    """A Claude Code session (and its subagent's file) with every planted secret in every place a session can
    hold text; see the module doc."""
    secrets = planted_secrets()
    every = "\n".join(s.text for s in secrets)
    cwd = f"/home/{USER}/projects/app"
    base = {"sessionId": session, "cwd": cwd, "version": "2.1.0", "gitBranch": "main", "userType": "external"}

    def line(kind: str, uuid: str, parent: str | None, content, **extra) -> dict:
        role = "assistant" if kind == "assistant" else "user"
        message = {"role": role, "content": content}
        if "message_id" in extra:
            message["id"] = extra.pop("message_id")
        return {
            **base,
            "type": kind,
            "uuid": f"e2e-{uuid}",
            "parentUuid": parent and f"e2e-{parent}",
            "message": message,
            **extra,
        }

    lines: list[dict | str] = [
        {"type": "file-history-snapshot", "messageId": "x", "snapshot": {"trackedFileBackups": {f"{cwd}/.env": every}}},
        line("user", "u1", None, f"Deploy the app. Credentials:\n{every}"),
        # One assistant message over three lines (text, then two tool calls), merged by message.id.
        line(
            "assistant",
            "a1",
            "u1",
            [{"type": "text", "text": f"I will run {secrets[9].text} first."}],
            message_id="msg_1",
        ),
        line(
            "assistant",
            "a2",
            "a1",
            [
                {
                    "type": "tool_use",
                    "id": "toolu_1",
                    "name": "Bash",
                    "input": {
                        "command": f"curl -u deploy:plantedCurlPw {secrets[11].text}\n{secrets[0].text}",
                        "description": f"Deploy as {secrets[14].needle}",
                    },
                }
            ],
            message_id="msg_1",
        ),
        line(
            "assistant",
            "a3",
            "a2",
            [
                {
                    "type": "tool_use",
                    "id": "toolu_2",
                    "name": MCP_TOOL,
                    "input": {
                        "env": {"AWS_SECRET_ACCESS_KEY": secrets[1].needle, secrets[2].needle: "a secret as a key"},
                        "values": [secrets[5].text, {"header": secrets[10].text}],
                        "path": f"C:\\Users\\plantedbob\\{USER}.txt",
                        "key": secrets[12].text,
                    },
                }
            ],
            message_id="msg_1",
        ),
        line(
            "user",
            "u2",
            "a3",
            [{"type": "tool_result", "tool_use_id": "toolu_1", "content": every}],
            toolUseResult={"stdout": every, "stderr": secrets[3].text},
        ),
        line(
            "user",
            "u3",
            "u2",
            [{"type": "tool_result", "tool_use_id": "toolu_2", "content": [{"type": "text", "text": every}]}],
        ),
        '{"type": "user", "message": {"role": "user", "content": "cut off ' + secrets[4].needle,  # truncated
        line("user", "c1", "u3", f"This session is being continued. Summary:\n{every}", isCompactSummary=True),
        line("user", "u4", "c1", [{"type": "text", "text": f"Now rotate {secrets[6].text} and {secrets[7].text}"}]),
        line(
            "assistant",
            "a4",
            "u4",
            [
                {
                    "type": "tool_use",
                    "id": "toolu_3",
                    "name": "Task",
                    "input": {
                        "description": "rotate keys",
                        "prompt": f"Rotate {secrets[8].text}",
                        "subagent_type": "general",
                    },
                }
            ],
            message_id="msg_4",
        ),
        line("user", "u5", "a4", [{"type": "tool_result", "tool_use_id": "toolu_3", "content": every}]),
        line(
            "assistant",
            "a5",
            "u5",
            [{"type": "text", "text": f"Done; the new key is {secrets[13].text}"}],
            message_id="msg_5",
        ),
    ]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines), encoding="utf-8")
    sub = {**base, "isSidechain": True, "agentId": AGENT}
    subagent = [
        {
            **sub,
            "type": "user",
            "uuid": "s1",
            "parentUuid": None,
            "message": {"role": "user", "content": f"Rotate {secrets[8].text}\n{every}"},
        },
        {
            **sub,
            "type": "assistant",
            "uuid": "s2",
            "parentUuid": "s1",
            "message": {
                "id": "msg_s",
                "role": "assistant",
                "content": [
                    {"type": "text", "text": secrets[15].text},
                    {
                        "type": "tool_use",
                        "id": "toolu_s",
                        "name": "Edit",
                        "input": {
                            "file_path": f"{cwd}/.env",
                            "old_string": secrets[16].text,
                            "new_string": secrets[17].text,
                        },
                    },
                ],
            },
        },
        {
            **sub,
            "type": "user",
            "uuid": "s3",
            "parentUuid": "s2",
            "message": {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "toolu_s", "content": every}],
            },
        },
    ]
    sub_path = path.parent / session / "subagents" / f"agent-{AGENT}.jsonl"
    sub_path.parent.mkdir(parents=True, exist_ok=True)
    sub_path.write_text("".join(json.dumps(x) + "\n" for x in subagent), encoding="utf-8")


# --- running the commands ------------------------------------------------------------------------------------


def toolchoice(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    """The installed ``toolchoice`` console script (next to this interpreter), with the fake keys set."""
    script = Path(sys.executable).with_name("toolchoice")
    command = (
        [str(script)] if script.exists() else [sys.executable, "-c", "from toolchoice_pipeline.cli import main; main()"]
    )
    return subprocess.run(
        [*command, *args], cwd=cwd, capture_output=True, text=True, timeout=600, env={**os.environ, **ENV_KEYS}
    )


@dataclass
class Outcome:
    root: Path
    data_dir: Path
    outputs: dict[str, str]  # command -> stdout + stderr


@pytest.fixture(scope="module")
def outcome(tmp_path_factory) -> Outcome:
    root = tmp_path_factory.mktemp("secrets_e2e")
    data_dir = root / "data"
    shutil.copytree(DATA / "suites" / "coding_agent", data_dir / "suites" / "coding_agent")
    shutil.copy(DATA / "toolchoice.yaml", data_dir / "toolchoice.yaml")
    # Where Claude Code keeps sessions: the project directory's name spells the user's home directory.
    project = root / "home" / USER / ".claude" / "projects" / f"-home-{USER}-projects-app"
    session = project / f"{SESSION}.jsonl"
    write_session(session)
    other = project / "5ec2e7a1-0000-4000-8000-000000000001.jsonl"
    write_transcript_with_secrets(other)
    subagent = project / SESSION / "subagents" / f"agent-{AGENT}.jsonl"

    outputs: dict[str, str] = {}
    ingest = toolchoice(
        "ingest",
        "claude-code",
        str(session),
        str(subagent),
        str(other),
        "--suite",
        SUITE,
        "--data-dir",
        str(data_dir),
        cwd=root,
    )
    outputs["ingest"] = ingest.stdout + ingest.stderr
    assert ingest.returncode == 0, ingest.stderr
    run = toolchoice(
        "run",
        "--suite",
        SUITE,
        "--release",
        RELEASE,
        "--kind",
        "release",
        "--models",
        f"replay/suites/{SUITE}/replay.jsonl,local/bm25-router",
        "--chart",  # the chart's labels come from release ids and model strings: looked at too
        "--data-dir",
        str(data_dir),
        cwd=root,
    )
    outputs["run"] = run.stdout + run.stderr
    assert run.returncode == 0, run.stdout + run.stderr
    gate = toolchoice(
        "gate",
        RELEASE,
        "--junit",
        str(data_dir / "releases" / RELEASE / "junit.xml"),
        "--data-dir",
        str(data_dir),
        cwd=root,
    )
    outputs["gate"] = gate.stdout + gate.stderr
    assert gate.returncode == 0, gate.stdout + gate.stderr
    return Outcome(root, data_dir, outputs)


# --- reading everything back ---------------------------------------------------------------------------------


def parquet_texts(path: Path) -> Iterator[str]:
    """Every row of a Parquet file as JSON text (nested values included), and its schema metadata."""
    table = pq.read_table(path)
    for key, value in (table.schema.metadata or {}).items():
        yield key.decode("utf-8", "replace") + "=" + value.decode("utf-8", "replace")
    for row in table.to_pylist():
        yield json.dumps(row, default=str, ensure_ascii=False)


def duckdb_texts(path: Path) -> Iterator[tuple[str, str]]:
    """``(relation, text)``: every row of every table and view with all columns cast to VARCHAR, and each
    view's SQL."""
    con = duckdb.connect(str(path), read_only=True)
    try:
        for name, sql in con.execute("SELECT view_name, sql FROM duckdb_views() WHERE NOT internal").fetchall():
            yield name, sql
        relations = [
            row[0]
            for row in con.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_catalog = current_database()"
            ).fetchall()
        ]
        for name in relations:
            for row in con.execute(f'SELECT COLUMNS(*)::VARCHAR FROM "{name}"').fetchall():
                yield name, json.dumps(row, ensure_ascii=False)
    finally:
        con.close()


def blob_text(value: bytes) -> str:
    """A SQLite blob as text: inflated when it is zlib data (Dagster's snapshots), else decoded as is."""
    try:
        value = zlib.decompress(value)
    except zlib.error:
        pass
    return value.decode("utf-8", "replace")


def sqlite_texts(path: Path) -> Iterator[tuple[str, str]]:
    """``(table, text)`` for every cell of every table of a SQLite file (blobs inflated when compressed)."""
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        tables = [row[0] for row in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        for table in tables:
            for row in con.execute(f'SELECT * FROM "{table}"'):
                for value in row:
                    if isinstance(value, bytes):
                        yield table, blob_text(value)
                    elif value is not None:
                        yield table, str(value)
    finally:
        con.close()


def is_sqlite(path: Path) -> bool:
    with path.open("rb") as handle:
        return handle.read(16) == b"SQLite format 3\x00"


def assert_clean(texts, where: str, wanted: list[str], *, marker: bool = True) -> int:
    """Assert no needle (nor ``MARKER``, when ``marker``) in any text, given as a string or ``(label, text)``;
    returns how many texts were read."""
    count = 0
    for text in texts:
        label, text = text if isinstance(text, tuple) else ("", text)
        found = found_in(text, wanted, marker=marker)
        assert not found, f"secret found in {where} {label}: {found}"
        count += 1
    return count


def files(root: Path, pattern: str = "*") -> list[Path]:
    return sorted(p for p in root.rglob(pattern) if p.is_file())


# --- the scanners can fail -----------------------------------------------------------------------------------


def test_the_scanners_find_a_needle_that_raw_bytes_miss(tmp_path):
    needle = needles()[0]
    table = pa.table({"record": [json.dumps({"text": f"key {needle} " + "padding " * 200})] * 50})
    path = tmp_path / "compressed.parquet"
    pq.write_table(table, path, compression="gzip", write_statistics=False)
    assert needle.encode() not in path.read_bytes()  # compressed: a byte scan alone would miss it
    with pytest.raises(AssertionError, match="secret found"):
        assert_clean(parquet_texts(path), "parquet", needles())
    db = tmp_path / "blob.db"
    con = sqlite3.connect(db)
    con.execute("CREATE TABLE snapshots (body BLOB)")
    con.execute("INSERT INTO snapshots VALUES (?)", (zlib.compress(f"id {needle}".encode()),))
    con.commit()
    con.close()
    assert needle.encode() not in db.read_bytes()
    with pytest.raises(AssertionError, match="secret found"):
        assert_clean(sqlite_texts(db), "sqlite", needles())
    with pytest.raises(AssertionError, match="secret found"):
        assert_clean(["the user Plantedalice"], "text", needles())  # any case of the marker


def test_at_least_twelve_kinds_are_planted_in_the_session(tmp_path):
    write_session(tmp_path / "s.jsonl")
    text = (tmp_path / "s.jsonl").read_text() + next((tmp_path / SESSION).rglob("*.jsonl")).read_text()
    kinds = {s.kind for s in planted_secrets() if json.dumps(s.needle)[1:-1] in text}
    assert len(kinds) >= 12 and len(kinds) == len({s.kind for s in planted_secrets()})


# --- the leaks this test found, each fixed at its source ---------------------------------------------------


def test_a_long_user_name_is_redacted_inside_snake_case_identifiers_but_a_short_one_only_as_a_word():
    sanitiser = Sanitiser()
    sanitiser.learn_path(f"/home/{USER}/app")
    sanitiser.learn_path("/Users/max/app")
    out = sanitiser.text(f"mcp__{USER}_vault__put {USER}_notes.md max_tokens=5 ls ~max")
    assert out == (
        "mcp__[REDACTED:user_name]_vault__put [REDACTED:user_name]_notes.md max_tokens=5 ls ~[REDACTED:user_name]"
    )


def test_tool_names_are_sanitised_and_a_label_naming_such_a_tool_still_matches(tmp_path):
    session = tmp_path / "s.jsonl"
    base = {"sessionId": SESSION, "cwd": f"/home/{USER}/app"}
    lines = [
        {
            **base,
            "type": "user",
            "uuid": "u1",
            "parentUuid": None,
            "message": {"role": "user", "content": "store the note"},
        },
        {
            **base,
            "type": "assistant",
            "uuid": "a1",
            "parentUuid": "u1",
            "message": {
                "id": "m1",
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "t1", "name": MCP_TOOL, "input": {"note": "x"}}],
            },
        },
    ]
    session.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    labels = tmp_path / "labels.jsonl"
    labels.write_text(json.dumps({"session": SESSION, "turn": 0, "expected": {"tool": MCP_TOOL}}) + "\n")
    report = ingest_claude_code(
        [session],
        IngestOptions(
            suite="s",
            data_dir=tmp_path / "data",
            labels=labels,
            catalog=DATA / "suites" / "coding_agent" / "catalog.yaml",
        ),
    )
    redacted = "mcp__[REDACTED:user_name]_vault__put"
    assert report.added_tools == [redacted] and report.labelled == 1
    task = json.loads((tmp_path / "data" / "suites" / "s" / "tasks.jsonl").read_text())
    replay = json.loads((tmp_path / "data" / "suites" / "s" / "replay.jsonl").read_text())
    assert task["expected"]["tool"] == replay["tool_calls"][0]["name"] == redacted


def _session_with_a_bad_line(path: Path) -> None:
    base = {"sessionId": SESSION, "cwd": f"/home/{USER}/app"}
    lines = [
        "not json",
        json.dumps(
            {
                **base,
                "type": "user",
                "uuid": "u1",
                "parentUuid": None,
                "message": {"role": "user", "content": "list files"},
            }
        ),
        json.dumps(
            {
                **base,
                "type": "assistant",
                "uuid": "a1",
                "parentUuid": "u1",
                "message": {
                    "id": "m1",
                    "role": "assistant",
                    "content": [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls"}}],
                },
            }
        ),
    ]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


@pytest.mark.parametrize("where", ["home/{user}/.claude/projects/-home-{user}-app", "copied/-home-{user}-app"])
def test_a_session_file_path_in_a_warning_does_not_reveal_the_user_name(tmp_path, monkeypatch, where):
    """Shown relative to the working directory, ``home/<user>/...`` has no leading slash for the /home/ rule,
    and a copied project directory ``-home-<user>-app`` none at all: the user name is learned from the file's
    absolute path and from the records' ``cwd``, and the warnings are sanitised again after reading."""
    relative = Path(where.format(user=USER)) / "s.jsonl"
    _session_with_a_bad_line(tmp_path / relative)
    monkeypatch.chdir(tmp_path)
    report = ingest_claude_code(
        [relative],
        IngestOptions(suite="s", data_dir=tmp_path / "data", catalog=DATA / "suites" / "coding_agent" / "catalog.yaml"),
    )
    assert len(report.warnings.items) == 1 and "s.jsonl:1: line skipped" in report.warnings.items[0]
    assert USER not in report.warnings.items[0] and "-home-[REDACTED:user_name]-app" in report.warnings.items[0]
    assert USER not in (tmp_path / "data" / "suites" / "s" / "ingest.json").read_text()


# --- the run happened on the planted sessions ----------------------------------------------------------------


@pytest.mark.slow
def test_the_sessions_were_ingested_and_run_to_a_scored_release(outcome):
    manifest = json.loads((outcome.data_dir / "suites" / SUITE / "ingest.json").read_text())
    assert manifest["tasks"] == 5  # 2 main turns + 1 subagent turn + the 2 turns of the second session
    assert {s.kind for s in planted_secrets()} <= set(manifest["redactions"])
    scores = json.loads((outcome.data_dir / "releases" / RELEASE / "scores.json").read_text())
    replay = f"replay/suites/{SUITE}/replay.jsonl"
    assert set(scores["models"]) == {replay, "local/bm25-router"}
    assert scores["models"][replay]["n_tasks"] == 5 and scores["models"][replay]["errors"] == 0
    assert scores["models"][replay]["tsq_mean"] is not None  # the judge ran
    tasks = (outcome.data_dir / "suites" / SUITE / "tasks.jsonl").read_text()
    assert "[REDACTED:user_name]" in tasks and "[REDACTED:private_key]" in tasks


# --- nothing survives ----------------------------------------------------------------------------------------


@pytest.mark.slow
def test_no_secret_in_any_parquet_file(outcome):
    parquet = files(outcome.data_dir / "warehouse", "*.parquet")
    tables = {p.relative_to(outcome.data_dir / "warehouse").parts[0] for p in parquet}
    assert {"agent_calls", "judge_votes", "task_scores", "release_scores", "tool_catalog", "_staging"} <= tables
    read = sum(assert_clean(parquet_texts(p), str(p), needles()) for p in parquet)
    assert read > 50


@pytest.mark.slow
def test_no_secret_in_the_staged_stage_outputs(outcome):
    staged = files(outcome.data_dir / "warehouse" / "_staging" / f"release_id={RELEASE}", "*.parquet")
    # single outputs by name; the sharded ones as one file per shard in a folder named after the asset
    names = {p.stem if p.parent.name.startswith("release_id=") else p.parent.name for p in staged}
    # eval_tasks is the manifest of the snapshot's tasks, staged apart as release_snapshot.tasks.parquet
    assert names >= {"tool_catalog", "release_snapshot", "release_snapshot.tasks", "agent_runs", "judge_votes"}
    assert "task_scores" in names
    texts = [text for p in staged for text in parquet_texts(p)]
    assert_clean(texts, "the staged outputs", needles())
    assert any("[REDACTED:" in text for text in texts)  # the sanitised context did reach the stages


@pytest.mark.slow
def test_no_secret_in_the_duckdb_file(outcome):
    rows = list(duckdb_texts(outcome.data_dir / "warehouse" / "toolchoice.duckdb"))
    relations = {name for name, _ in rows}
    assert {"task_scores", "release_scores", "agent_calls", "judge_votes", "tool_catalog"} <= relations
    assert any(SESSION[:8] in text for name, text in rows if name == "agent_calls")
    assert_clean(rows, "DuckDB", needles())


@pytest.mark.slow
def test_no_secret_in_the_call_journal(outcome):
    rows = list(sqlite_texts(outcome.data_dir / "cache" / "agent_calls.sqlite"))
    assert sum(1 for table, _ in rows if table == "agent_calls") > 0
    assert_clean(rows, "the call journal", needles())


@pytest.mark.slow
def test_no_secret_in_dagster_storage_or_compute_logs(outcome):
    home = outcome.data_dir / "dagster_home"
    databases = [p for p in files(home) if is_sqlite(p)]
    rows = [(f"{p.relative_to(home)}:{table}", text) for p in databases for table, text in sqlite_texts(p)]
    tables = {label for label, _ in rows}
    # The event log, run storage and snapshots were read (so metadata, tags and logs were too).
    assert any(label.endswith(":event_logs") for label in tables)
    assert any(label.endswith(":runs") for label in tables) and any(label.endswith(":snapshots") for label in tables)
    assert any("ASSET_MATERIALIZATION" in text for _, text in rows)
    assert_clean(rows, "Dagster's storage", needles())
    logs = [p for p in files(home / "storage")]
    assert_clean([(str(p), p.read_text("utf-8", "replace")) for p in logs], "compute logs", needles())


@pytest.mark.slow
def test_no_secret_in_the_release_files_or_the_ingested_suite(outcome):
    release_files = files(outcome.data_dir / "releases")
    assert {"scores.json", "gate.md", "request.json", "trend.png", "junit.xml"} <= {p.name for p in release_files}
    suite_files = files(outcome.data_dir / "suites" / SUITE)
    assert_clean(
        [(str(p), p.read_bytes().decode("utf-8", "replace")) for p in release_files + suite_files], "a file", needles()
    )


@pytest.mark.slow
def test_no_secret_in_the_command_output(outcome):
    assert "redacted:" in outcome.outputs["ingest"] and RELEASE in outcome.outputs["run"]
    for command, output in outcome.outputs.items():
        assert_clean([output], f"the output of toolchoice {command}", needles())


@pytest.mark.slow
def test_no_secret_in_the_raw_bytes_of_any_file_under_the_data_dir(outcome):
    paths = files(outcome.data_dir)
    for path in paths:
        data = path.read_bytes()
        found = [n for n in needles() if n.encode() in data] + ([MARKER] if MARKER.encode() in data.lower() else [])
        assert not found, f"secret found in the bytes of {path}: {found}"
    assert len(paths) > 30


@pytest.mark.slow
def test_no_api_key_from_the_environment_is_stored_or_printed(outcome):
    texts: list[tuple[str, str]] = [(command, output) for command, output in outcome.outputs.items()]
    for path in files(outcome.data_dir):
        if path.suffix == ".parquet":
            texts.extend((str(path), text) for text in parquet_texts(path))
        elif path.suffix == ".duckdb":
            texts.extend(duckdb_texts(path))
        elif is_sqlite(path):
            texts.extend((str(path), text) for _, text in sqlite_texts(path))
        texts.append((str(path), path.read_bytes().decode("utf-8", "replace")))
    assert_clean(texts, "", env_needles(), marker=False)
