"""The judge poll journal: every finished poll of a release, written as it finishes, so a resumed or forced
re-run of that release re-asks none of them.

A resume, not a cache: rows are keyed by the release id (the ``resume_key``), the episode (model, task), the
poll number, the judge model, the rubric version and a hash of exactly what the judge was shown; a new release
polls afresh (ChainPoll votes are independent samples). A poll is finished when its vote is valid or every
attempt was used; a poll stopped by a failed provider call or the judge budget is asked again. One SQLite file
(standard library, WAL) at ``<data_dir>/cache/judge_polls.sqlite``; each vote is committed on its own, so a
SIGKILL loses at most the polls in flight.
"""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path
from typing import Any

from toolchoice_pipeline.judge.parse import ABSTAINED
from toolchoice_pipeline.records.episodes import JudgeVote
from toolchoice_pipeline.util.canonical import short_hash
from toolchoice_pipeline.util.errors import InputError, Problem, display_path

JOURNAL_FILE = "cache/judge_polls.sqlite"
_SCHEMA = """
CREATE TABLE IF NOT EXISTS judge_polls (
    resume_key TEXT NOT NULL,
    model TEXT NOT NULL,
    task_id TEXT NOT NULL,
    poll INTEGER NOT NULL,
    shown_key TEXT NOT NULL,
    vote_json TEXT NOT NULL,
    created_at REAL NOT NULL,
    PRIMARY KEY (resume_key, model, task_id, poll, shown_key)
)
"""


def shown_key(judge_model: str, rubric_version: str, messages: list[dict[str, Any]]) -> str:
    """12-hex hash of what one poll asks: the judge model, the rubric version and the messages."""
    return short_hash({"judge_model": judge_model, "rubric_version": rubric_version, "messages": messages})


class PollJournal:
    """The finished polls of one release (``resume_key``). ``resumed``/``asked`` count this run's polls."""

    def __init__(self, data_dir: Path, resume_key: str):
        path = Path(data_dir) / JOURNAL_FILE
        path.parent.mkdir(parents=True, exist_ok=True)
        self.resume_key = resume_key
        self.resumed = 0
        self.asked = 0
        try:
            self._db = sqlite3.connect(str(path), timeout=60, check_same_thread=False)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.execute(_SCHEMA)
            self._db.commit()
        except sqlite3.DatabaseError as exc:  # not a database (garbage, truncated), or one of another shape
            raise InputError(
                Problem(
                    file=display_path(path),
                    message=f"the judge-poll journal cannot be opened ({exc}): delete the damaged file (only "
                    "finished polls of interrupted runs are lost: they are asked again)",
                )
            ) from None

    def finished(self, model: str, task_id: str, poll: int, shown: str) -> JudgeVote | None:
        row = self._db.execute(
            "SELECT vote_json FROM judge_polls WHERE resume_key=? AND model=? AND task_id=? AND poll=? AND shown_key=?",
            (self.resume_key, model, task_id, poll, shown),
        ).fetchone()
        if row is None:
            return None
        self.resumed += 1
        return JudgeVote.model_validate_json(row[0])

    def record(self, vote: JudgeVote, shown: str, *, max_attempts: int) -> None:
        """Journal ``vote`` if its poll finished (valid, an abstention, which is final and never re-asked, or every
        attempt used); count it as asked."""
        self.asked += 1
        abstained = (vote.error or "").startswith(ABSTAINED)
        if not (vote.valid or abstained or vote.attempts >= max_attempts):
            return
        self._db.execute(
            "INSERT OR REPLACE INTO judge_polls VALUES (?, ?, ?, ?, ?, ?, ?)",
            (self.resume_key, vote.model, vote.task_id, vote.poll, shown, vote.model_dump_json(), time.time()),
        )
        self._db.commit()

    def close(self) -> None:
        self._db.close()
