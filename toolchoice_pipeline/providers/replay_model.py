"""The ``replay/<path>`` model: a recorded model, one reply per task (DESIGN §3), without LiteLLM.

``model`` is the part after ``replay/``: ``replay//abs/file.jsonl`` gives ``/abs/file.jsonl``; a relative path is
resolved against ``metadata["data_dir"]`` if the caller gave one, else ``$TOOLCHOICE_DATA_DIR``, else ``./data``.
The caller names the task and the step in ``metadata`` (``{"task_id": ..., "step": 0}``, as the execution engine
does).

- Step 0 returns the recorded reply, rendered with :func:`~toolchoice_pipeline.records.calls.to_openai_message` (calls
  written in text stay in the text, undecodable arguments stay raw, so normalising the answer gives the
  recorded reply back).
- Later steps return a text reply with no call: a replay records only the first step, so the episode ends.
- A task with no line raises ``CustomLLMError(422)`` (not transient: an infrastructure error for that task only);
  a missing or bad file raises ``CustomLLMError(404)`` / ``CustomLLMError(400)`` with the file's problems
  (:func:`.errors.provider_error`).
- A call without a task id (a preflight) only checks that the file loads, and answers in text.

Called directly by :func:`toolchoice_pipeline.execution.llm.complete` (:mod:`.direct`) and by LiteLLM's handler
:class:`.replay.ReplayProvider`.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from toolchoice_pipeline.providers.errors import provider_error
from toolchoice_pipeline.records.calls import Reply, to_openai_message
from toolchoice_pipeline.suites.replay_file import load_replay
from toolchoice_pipeline.util.errors import InputError

LATER_STEP_TEXT = "(replay: the recording holds only the first step; the episode ends here)"


def replay_path(model: str, metadata: dict[str, Any] | None) -> Path:
    """The replay file for ``model`` (the part after ``replay/``): absolute as given, else under the data dir."""
    path = Path(model)
    if path.is_absolute():
        return path
    data_dir = (metadata or {}).get("data_dir") or os.environ.get("TOOLCHOICE_DATA_DIR") or "data"
    return Path(data_dir) / path


def replay_message(path: Path, task_id: str, step: int) -> dict[str, Any]:
    """The assistant message (OpenAI chat format) replayed for ``task_id`` at ``step``.

    Raises ``CustomLLMError``: 422 when the file has no line for the task, 404 when the file is missing,
    400 when it is malformed (the message lists each problem with file, line and field).
    """
    replies = _replies(path)
    if task_id not in replies:
        raise provider_error(422, f"replay file {path} has no line for task {task_id}")
    if step > 0:
        return {"role": "assistant", "content": LATER_STEP_TEXT}
    return to_openai_message(replies[task_id])


def replay_answer(model: str, metadata: dict[str, Any] | None) -> dict[str, Any]:
    """The reply of ``replay/<model>`` to the call ``metadata`` names (task id and step; none: a preflight, answered
    in text once the file loads). Raises ``CustomLLMError`` as :func:`replay_message` does."""
    metadata = metadata or {}
    path = replay_path(model, metadata)
    task_id = metadata.get("task_id")
    if task_id is None:
        return {"role": "assistant", "content": f"(replay: {path} holds {len(_replies(path))} recorded replies)"}
    return replay_message(path, str(task_id), int(metadata.get("step") or 0))


def _replies(path: Path) -> dict[str, Reply]:
    if not path.is_file():
        raise provider_error(404, f"replay file {path} not found")
    try:
        return load_replay(path)
    except InputError as exc:
        raise provider_error(400, f"bad replay file {path}:\n{exc}") from None
