"""Releases: ``releases/<id>/scores.json``, the baseline, and publishing a release (score → store → gate).

- ``scores.json`` (DESIGN §3 plus ``n_scored``, Wilson intervals, tags, flags, ``run_id``, ``evaluated_at``)
  is written **last** and atomically: a release without it is incomplete, whatever else exists.
- The baseline of a suite is the most recent ``release``-kind release whose gate passed (DESIGN §2), kept in
  ``releases/baseline.json`` with its promotion history. Nightly, catalog-change and adhoc runs are gated
  against it but never become it; a failed gate never replaces it. Promotion is its own step
  (:meth:`ReleaseStore.promote`).
- Re-using the id of a finished release is refused unless ``force``; a forced re-run of a promoted release
  that no longer qualifies takes it out of the baseline history (the previous baseline comes back).
- At an object-store URL (``TOOLCHOICE_RELEASES_URL``) the layout is the same; there is no file lock between
  machines: a publisher holds a lease object (``releases/<id>/.publishing.json``, written only if absent),
  ``scores.json`` of a new release is written only if absent, and each promotion or withdrawal is an
  append-only record, ``_promotions/<suite>/<n>.json``, written only if absent (the baseline history is those
  records in order; ``baseline.json`` is a copy rewritten after each, for readers of the files).
"""

from __future__ import annotations

import contextlib
import json
import time
import uuid
from collections.abc import Collection, Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
from filelock import FileLock
from pydantic import ValidationError

from toolchoice_pipeline.records.episodes import Episode, JudgeVote, TaskScore
from toolchoice_pipeline.releases.confusion import (
    CONFUSION_COLUMNS,
    ToolChange,
    catalog_changes,
    confusion_changes_between,
)
from toolchoice_pipeline.releases.document import GateDocument, ReleaseDocument
from toolchoice_pipeline.releases.gate import GateResult, check_gate, gate_junit_xml, gate_markdown, task_flips
from toolchoice_pipeline.releases.gate_scope import exempt
from toolchoice_pipeline.releases.lineage import Lineage
from toolchoice_pipeline.releases.object_store import is_remote, read_whole, releases_root, write_whole
from toolchoice_pipeline.releases.pairing import PAIRED_COLUMNS, paired_tasks
from toolchoice_pipeline.releases.request import RELEASE_ID
from toolchoice_pipeline.releases.warehouse import ReleaseCommit, Warehouse
from toolchoice_pipeline.releases.warehouse_tables import (
    agent_calls_table,
    judge_votes_table,
    release_scores_table,
    task_scores_table,
    tool_catalog_table,
    with_lineage,
)
from toolchoice_pipeline.scoring.columnar import score_release, summarise_columnar
from toolchoice_pipeline.scoring.summary import ModelScores, mark_unpriced
from toolchoice_pipeline.suites.config import load_run_config
from toolchoice_pipeline.suites.suite import Suite
from toolchoice_pipeline.util.atomic import write_file_atomically
from toolchoice_pipeline.util.errors import InputError, Problem, display_path, pydantic_problems
from toolchoice_pipeline.util.json_text import load_json
from toolchoice_pipeline.util.text_files import read_utf8

SCORES_FILE = "scores.json"
GATE_MARKDOWN_FILE = "gate.md"
BASELINE_FILE = "baseline.json"
PROMOTABLE_KIND = "release"
PROMOTIONS_DIR = "_promotions"
PROMOTION_ATTEMPTS = 5  # promotions of a suite that may come first before one gives up (object store)
PUBLISHING_LEASE = ".publishing.json"
PUBLISHING_LEASE_S = 600.0  # as long as the local publishing lock waits
KNOWN_SHOWN = 10  # finished release ids named when an unknown one is asked for
# The task_scores columns the gate reads of a release and its baseline: pairing, flips and confusion changes.
GATE_COLUMNS = list(dict.fromkeys(PAIRED_COLUMNS + CONFUSION_COLUMNS))


class ReleaseStore:
    """``<data_dir>/releases`` (or ``$TOOLCHOICE_RELEASES_URL``): one directory per release plus ``baseline.json``."""

    def __init__(self, data_dir: Path):
        self.data_dir = Path(data_dir)
        self.root = releases_root(self.data_dir)
        self.remote = is_remote(self.root)

    def scores_path(self, release_id: str) -> Path:
        """``releases/<id>/scores.json``; raises :class:`InputError` for an id that is not a safe directory name."""
        if not RELEASE_ID.match(release_id or ""):
            raise InputError(
                Problem(
                    file="<release>",
                    field="release_id",
                    message=f"{release_id!r} is not a release id (letters, digits, '.', '_', '-')",
                )
            )
        return self.root / release_id / SCORES_FILE

    def has_scores(self, release_id: str) -> bool:
        path = self.scores_path(release_id)
        if self.remote:
            path.fs.invalidate_cache(path.path)  # another machine may have written it since
        return path.is_file()

    def read_scores(self, release_id: str) -> ReleaseDocument:
        """The stored ``scores.json``; raises :class:`InputError` for an unknown, incomplete or broken release,
        naming the field that is missing or malformed."""
        path = self.scores_path(release_id)
        shown = display_path(path)
        text = read_whole(path) if self.remote else read_utf8(path) if path.is_file() else None
        if text is None:
            ids = self.release_ids()
            # A long history would make the one-line error thousands of ids long: the last few, and the count.
            known = (
                ", ".join(ids[-KNOWN_SHOWN:])
                + (f" and {len(ids) - KNOWN_SHOWN} more" if len(ids) > KNOWN_SHOWN else "")
                if ids
                else "none"
            )
            raise InputError(
                Problem(file=shown, message=f"no finished release '{release_id}' (finished releases: {known})")
            )
        data = load_json(text, shown)
        if not isinstance(data, dict):
            raise InputError(Problem(file=shown, message="scores.json must be a JSON object (DESIGN §3)"))
        for key in ("release_id", "kind", "suite", "models"):
            if key not in data:
                raise InputError(Problem(file=shown, field=key, message="required field is missing"))
        models = data["models"]
        if not isinstance(models, dict) or not all(isinstance(figures, dict) for figures in models.values()):
            raise InputError(
                Problem(file=shown, field="models", message="must be an object of figures per model (DESIGN §3)")
            )
        try:
            return ReleaseDocument.model_validate(data)
        except ValidationError as exc:
            raise InputError(pydantic_problems(exc, shown, model=ReleaseDocument)) from None

    def write_scores(self, document: ReleaseDocument, *, only_if_absent: bool = False) -> Path:
        """Write ``scores.json`` whole (temp file, fsync, rename; on an object store one upload). With
        ``only_if_absent`` raise ``FileExistsError`` when the release has one already (a conditional write)."""
        path = self.scores_path(document.release_id)
        write_whole(path, document.to_json_text(), only_if_absent=only_if_absent)
        return path

    def unpublish(self, release_id: str) -> None:
        """Withdraw a release's ``scores.json`` (and so its finished state) and take its tables out of the
        warehouse views: for a run interrupted after publishing and before its promotion, so that no release
        is seen as finished that its run did not finish. Its files and tables stay; the next run replaces them."""
        path = self.scores_path(release_id)
        with self.publishing_lock(release_id):
            path.unlink(missing_ok=True)  # a Path, or a UPath on an object store
            if self.remote:
                self.root.fs.invalidate_cache()
            Warehouse(self.data_dir).unpublish(release_id)

    def write_file(self, release_id: str, name: str, text: str) -> Any:
        """Write ``releases/<id>/<name>`` whole (``gate.md``, say); returns its path."""
        path = self.scores_path(release_id).with_name(name)
        write_whole(path, text)
        return path

    def release_ids(self) -> list[str]:
        """Ids of the finished releases (those with a ``scores.json``), sorted."""
        if self.remote:
            self.root.fs.invalidate_cache()
        elif not self.root.is_dir():
            return []
        return sorted(p.parent.name for p in self.root.glob(f"*/{SCORES_FILE}"))

    # --- the baseline ----------------------------------------------------------------------------------------

    def _lock(self) -> Any:
        """The store's lock for the baseline (local files only; on an object store the promotion records are
        written conditionally instead)."""
        if self.remote:
            return contextlib.nullcontext()
        self.root.mkdir(parents=True, exist_ok=True)
        return FileLock(str(self.root / ".lock"), timeout=600)

    def publishing_lock(self, release_id: str) -> Any:
        """Held while one release is checked, committed and its ``scores.json`` written (one writer per id). On an
        object store a lease instead (:meth:`_publishing_lease`)."""
        if self.remote:
            return self._publishing_lease(release_id)
        directory = self.scores_path(release_id).parent
        directory.mkdir(parents=True, exist_ok=True)
        return FileLock(str(directory / ".publish.lock"), timeout=600)

    @contextlib.contextmanager
    def _publishing_lease(self, release_id: str) -> Iterator[None]:
        """``releases/<id>/.publishing.json``, written only if absent and removed after: a second writer of the
        release gets :class:`InputError` at once instead of waiting. A lease older than
        :data:`PUBLISHING_LEASE_S` is a dead writer's and is taken over."""
        path = self.scores_path(release_id).with_name(PUBLISHING_LEASE)
        lease = json.dumps({"id": uuid.uuid4().hex, "at": time.time()})
        try:
            write_whole(path, lease, only_if_absent=True)
        except FileExistsError:
            held = read_whole(path)
            try:
                since = float(json.loads(held)["at"]) if held else 0.0
            except (ValueError, TypeError, KeyError):
                since = 0.0
            if time.time() - since < PUBLISHING_LEASE_S:
                raise InputError(
                    Problem(
                        file=display_path(path),
                        field="release_id",
                        message=f"release '{release_id}' is being published by another writer (for "
                        f"{time.time() - since:.0f} s): run it again once that run finished",
                    )
                ) from None
            write_whole(path, lease)  # its writer died (no writer publishes for that long): taken over
        try:
            yield
        finally:
            path.unlink(missing_ok=True)

    def _baselines(self) -> dict[str, Any]:
        if self.remote:
            return {"suites": {suite: self._replayed(records) for suite, records in self._all_records().items()}}
        path = self.root / BASELINE_FILE
        if not path.is_file():
            return {"suites": {}}
        shown = display_path(path)
        data = load_json(read_utf8(path), shown)
        suites = data.get("suites") if isinstance(data, dict) else None
        if not isinstance(suites, dict) or not all(
            isinstance(entry, dict)
            and isinstance(entry.get("history", []), list)
            and all(
                isinstance(item, dict) and isinstance(item.get("release_id"), str) for item in entry.get("history", [])
            )
            for entry in suites.values()
        ):
            raise InputError(
                Problem(
                    file=shown,
                    field="suites",
                    message='must be {"suites": {"<suite>": '
                    '{"history": [{"release_id": ...}, ...]}}}: restore it from a backup',
                )
            )
        return data

    def _write_baselines(self, baselines: dict[str, Any]) -> None:
        write_whole(self.root / BASELINE_FILE, json.dumps(baselines, indent=2) + "\n")

    def _history(self, suite: str) -> list[dict[str, str]]:
        if self.remote:
            return self._replayed(self._records(suite))["history"]
        return list(self._baselines()["suites"].get(suite, {}).get("history", []))

    # --- the baseline on an object store: append-only promotion records ------------------------------------------

    def _records(self, suite: str) -> list[dict[str, Any]]:
        """The promotion records of ``suite``, in order (``{"action": "promote"|"withdraw", "release_id",
        "at"}``)."""
        directory = self.root / PROMOTIONS_DIR / suite
        directory.fs.invalidate_cache(directory.path)
        try:
            names = sorted(p.name for p in directory.iterdir() if p.name.endswith(".json"))
        except (FileNotFoundError, NotADirectoryError):  # no record yet (a store has no empty directories)
            return []
        records = []
        for name in names:
            shown = display_path(directory / name)
            record = load_json(read_whole(directory / name) or "", shown)
            if not isinstance(record, dict) or not isinstance(record.get("release_id"), str):
                raise InputError(
                    Problem(
                        file=shown, field="release_id", message="damaged promotion record: restore it from a backup"
                    )
                )
            records.append(record)
        return records

    def _all_records(self) -> dict[str, list[dict[str, Any]]]:
        directory = self.root / PROMOTIONS_DIR
        directory.fs.invalidate_cache(directory.path)
        try:
            suites = sorted(p.name for p in directory.iterdir() if p.is_dir())
        except (FileNotFoundError, NotADirectoryError):
            return {}
        return {suite: self._records(suite) for suite in suites}

    @staticmethod
    def _replayed(records: list[dict[str, Any]]) -> dict[str, Any]:
        """``{"history": [...], "release_id": ...}`` of ``baseline.json`` from a suite's promotion records."""
        history: list[dict[str, str]] = []
        for record in records:
            history = [e for e in history if e["release_id"] != record["release_id"]]
            if record.get("action", "promote") == "promote":
                history.append({"release_id": record["release_id"], "promoted_at": record.get("at", "")})
        return {"history": history, "release_id": history[-1]["release_id"] if history else None}

    def _append_record(self, suite: str, seen: int, action: str, release_id: str) -> bool:
        """Write record number ``seen`` (the count read) of ``suite`` only if absent; False when another writer
        wrote that number first. ``baseline.json`` is rewritten from the records after a write."""
        record = {"action": action, "release_id": release_id, "at": datetime.now(UTC).isoformat(timespec="seconds")}
        path = self.root / PROMOTIONS_DIR / suite / f"{seen:08d}.json"
        try:
            write_whole(path, json.dumps(record, indent=1) + "\n", only_if_absent=True)
        except FileExistsError:
            return False
        self._write_baselines(self._baselines())
        return True

    def _promote_on_object_store(self, scores: ReleaseDocument) -> bool:
        """:meth:`promote` without a lock: read the records, gate again if the baseline in force changed, append
        the next record only if absent; when another promotion took that number, look again (at most
        :data:`PROMOTION_ATTEMPTS` times, then :class:`InputError`)."""
        release_id = scores.release_id
        for _ in range(PROMOTION_ATTEMPTS):
            records = self._records(scores.suite)
            earlier = [e["release_id"] for e in self._replayed(records)["history"] if e["release_id"] != release_id]
            in_force = earlier[-1] if earlier else None
            if in_force != scores.baseline_release_id:
                scores = self._regate_against(scores, in_force)
            if not _promotable(scores):
                return False
            if self._append_record(scores.suite, len(records), "promote", release_id):
                return True
        raise InputError(
            Problem(
                file=display_path(self.root / PROMOTIONS_DIR / scores.suite),
                field="release_id",
                message=f"release '{release_id}' was not promoted: the baseline of suite {scores.suite} changed "
                f"{PROMOTION_ATTEMPTS} times while it was being promoted; run it again",
            )
        )

    def baseline(self, suite: str) -> str | None:
        """The current baseline release id of ``suite``, or None before its first promoted release."""
        history = self._history(suite)
        return history[-1]["release_id"] if history else None

    def baseline_for(self, suite: str, release_id: str) -> str | None:
        """The baseline ``release_id`` is gated against: the latest promoted release of ``suite`` other than itself."""
        earlier = [entry["release_id"] for entry in self._history(suite) if entry["release_id"] != release_id]
        return earlier[-1] if earlier else None

    def was_promoted(self, suite: str, release_id: str) -> bool:
        return any(entry["release_id"] == release_id for entry in self._history(suite))

    def promote(self, release_id: str) -> bool:
        """Make a finished release its suite's baseline if its kind is ``release`` and its gate passed against
        the baseline in force now.

        Gating and promotion are one step under the store's lock: a release gated against another baseline
        than the one in force (two releases of a suite running at once: the other was promoted meanwhile) is
        gated again against it first, and its ``scores.json`` and ``gate.md`` say so. Returns whether it is now
        the baseline. Raises :class:`InputError` for an unknown release.
        """
        scores = self.read_scores(release_id)
        if scores.kind != PROMOTABLE_KIND:
            return False
        if self.remote:
            return self._promote_on_object_store(scores)
        with self._lock():
            in_force = self.baseline_for(scores.suite, release_id)
            if in_force != scores.baseline_release_id:
                scores = self._regate_against(scores, in_force)
            if not _promotable(scores):
                return False
            baselines = self._baselines()
            entry = baselines["suites"].setdefault(scores.suite, {"history": []})
            entry["history"] = [e for e in entry["history"] if e["release_id"] != release_id]
            entry["history"].append(
                {"release_id": release_id, "promoted_at": datetime.now(UTC).isoformat(timespec="seconds")}
            )
            entry["release_id"] = release_id
            self._write_baselines(baselines)
        return True

    def _regate_against(self, scores: ReleaseDocument, baseline_id: str | None) -> ReleaseDocument:
        """``scores`` gated again against ``baseline_id``; ``scores.json`` and ``gate.md`` rewritten."""
        gate, baseline_models = regate(self.data_dir, scores.release_id, baseline_id)
        if baseline_id is None:
            gate.notes.append("the baseline it was gated against is no longer in force: gated again without one")
        else:
            gate.notes.append(
                f"gated again against {baseline_id}, the baseline in force when it was promoted "
                f"(first gated against {scores.baseline_release_id or 'no baseline'})"
            )
        document = scores.model_copy(
            update={
                "baseline_release_id": gate.baseline_release_id,
                "gate": GateDocument.model_validate(gate.to_json()),
            }
        )
        self.write_file(
            scores.release_id, GATE_MARKDOWN_FILE, gate_markdown(gate, scores.models, baseline_models, scores.suite)
        )
        self.write_scores(document)
        return document

    def withdraw(self, suite: str, release_id: str) -> None:
        """Take ``release_id`` out of ``suite``'s baseline history (after a forced re-run that no longer qualifies)."""
        if self.remote:
            for _ in range(PROMOTION_ATTEMPTS):
                records = self._records(suite)
                if not any(e["release_id"] == release_id for e in self._replayed(records)["history"]):
                    return
                if self._append_record(suite, len(records), "withdraw", release_id):
                    return
            raise InputError(
                Problem(
                    file=display_path(self.root / PROMOTIONS_DIR / suite),
                    message=f"release '{release_id}' could not be withdrawn: the baseline of suite {suite} changed "
                    f"{PROMOTION_ATTEMPTS} times meanwhile; run it again",
                )
            )
        with self._lock():
            baselines = self._baselines()
            entry = baselines["suites"].get(suite)
            if not entry:
                return
            entry["history"] = [e for e in entry["history"] if e["release_id"] != release_id]
            entry["release_id"] = entry["history"][-1]["release_id"] if entry["history"] else None
            self._write_baselines(baselines)

    def check_release_id_free(self, release_id: str, force: bool) -> None:
        """Refuse to reuse the id of a finished release unless ``force`` (a promoted one says so).

        Raises :class:`InputError` naming the release's ``scores.json``.
        """
        if force or not self.has_scores(release_id):
            return
        scores = self.read_scores(release_id)
        promoted = self.was_promoted(scores.suite, release_id)
        what = "the baseline of suite " + scores.suite if promoted else "a finished release"
        if not promoted and _promotable(scores):
            what += " whose gate passed but which is not the baseline"
        raise InputError(
            Problem(
                file=display_path(self.scores_path(release_id)),
                field="release_id",
                message=f"release '{release_id}' is {what}; use --force to re-run it "
                f"(finished by Dagster run {scores.run_id or 'unknown'})",
            )
        )


def _promotable(scores: ReleaseDocument) -> bool:
    """Whether a finished release (its ``scores.json``) may be a baseline: kind ``release``, its gate passed, and
    its judge calibration does not block promotion (failed with ``judge.calibration: fail``)."""
    calibration = scores.judge.calibration if scores.judge is not None else None
    return (
        scores.kind == PROMOTABLE_KIND
        and scores.gate_passed
        and not (calibration is not None and calibration.blocks_promotion)
    )


# --- publishing ----------------------------------------------------------------------------------------------


@dataclass
class PublishedRelease:
    """What publishing a release produced."""

    scores: ReleaseDocument
    gate: GateResult
    promoted: bool
    commit: ReleaseCommit
    scores_path: Any  # a Path, or a UPath on an object store
    gate_markdown: str = ""


def regate(
    data_dir: Path,
    release_id: str,
    baseline_id: str | None = None,
    *,
    models: dict[str, ModelScores] | None = None,
    suite: str | None = None,
    ungated: Collection[str] | None = None,
) -> tuple[GateResult, dict[str, ModelScores] | None]:
    """Gate a release already in the warehouse against ``baseline_id`` (default: the baseline it was gated
    against, else its suite's baseline other than itself). Returns the result and the baseline's ``models``.

    ``models``/``suite`` are the release's figures when its ``scores.json`` is not written yet (publishing).
    ``ungated``: the models that do not gate it (:func:`.gate_scope.exempt`; None: those its stored gate
    lists as ``not_gated``). Raises :class:`InputError` for an unknown release or baseline, or a baseline of
    another suite.
    """
    store, warehouse = ReleaseStore(data_dir), Warehouse(data_dir)
    if models is None:
        stored = store.read_scores(release_id)
        models, suite = stored.models, stored.suite
        if ungated is None and stored.gate is not None:
            ungated = getattr(stored.gate, "not_gated", None) or ()
        if baseline_id is None:
            baseline_id = stored.baseline_release_id or store.baseline_for(suite, release_id)
    elif baseline_id is None:
        baseline_id = store.baseline_for(suite, release_id)
    noise = load_run_config(data_dir).gate.noise
    if baseline_id is None:
        return exempt(check_gate(release_id, models, noise=noise), ungated or ()), None
    baseline = store.read_scores(baseline_id)
    if baseline.suite != suite:
        raise InputError(
            Problem(
                file=display_path(store.scores_path(baseline_id)),
                field="suite",
                message=f"baseline '{baseline_id}' is of suite '{baseline.suite}', "
                f"release '{release_id}' of suite '{suite}'",
            )
        )
    flips = {}
    paired = confusion = None
    catalog: list[ToolChange] = []
    notes = []
    if warehouse.commit(baseline_id) is not None and warehouse.commit(release_id) is not None:
        now_table, baseline_table = (_gate_columns(warehouse, release_id), _gate_columns(warehouse, baseline_id))
        flips = task_flips(_first_samples(now_table), _first_samples(baseline_table))
        paired = paired_tasks(now_table, baseline_table)
        confusion = confusion_changes_between(now_table, baseline_table)
        if confusion is None:
            notes.append("the release or the baseline predates tool-confusion columns: no confusion changes listed")
        catalog = catalog_changes(_suite_tools(warehouse, baseline_id), _suite_tools(warehouse, release_id))
    else:
        notes.append(
            "task scores of the release or the baseline are not in the warehouse: no flipped tasks listed, no intervals"
        )
    result = check_gate(
        release_id,
        models,
        baseline_id,
        baseline.models,
        flips,
        paired=paired,
        noise=noise,
        confusion_changes=confusion,
        catalog_changes=catalog,
    )
    result = exempt(result, ungated or ())
    result.notes.extend(notes)
    return result, baseline.models


def _gate_columns(warehouse: Warehouse, release_id: str) -> pa.Table:
    """A release's ``task_scores`` columns the gate pairs on and counts confusion changes from, read once. A release
    written before ``expected_tool`` gets the paired columns only (:func:`confusion_changes_between` then lists
    none), and one written before repeats a ``sample`` of 0."""
    try:
        return warehouse.read_table("task_scores", release_id, GATE_COLUMNS)
    except (KeyError, pa.ArrowInvalid):
        pass
    try:
        return warehouse.read_table("task_scores", release_id, PAIRED_COLUMNS)
    except (KeyError, pa.ArrowInvalid):
        table = warehouse.read_table("task_scores", release_id, [c for c in PAIRED_COLUMNS if c != "sample"])
        return table.append_column("sample", pa.array([0] * table.num_rows, pa.int32()))


def _suite_tools(warehouse: Warehouse, release_id: str) -> dict[str, tuple[str, str | None]]:
    """``{tool: (description, parameters_json)}`` of the suite catalog a release ran with (its ``tool_catalog``
    rows without a task)."""
    table = warehouse.read_table("tool_catalog", release_id, ["task_id", "tool_name", "description", "parameters_json"])
    return {
        row["tool_name"]: (row["description"], row["parameters_json"])
        for row in table.to_pylist()
        if row["task_id"] is None
    }


def _first_samples(table: pa.Table) -> pa.Table:
    """Sample 0 of every task: the flipped tasks are listed between first samples."""
    import pyarrow.compute as pc

    return table.filter(pc.equal(pc.fill_null(table.column("sample"), 0), 0))


def publish_release(
    data_dir: Path,
    suite: Suite,
    lineage: Lineage,
    kind: str,
    episodes: Iterable[Episode],
    votes: Iterable[JudgeVote] = (),
    *,
    judge: dict[str, Any] | None = None,
    force: bool = False,
    scores: list[TaskScore] | None = None,
    promote: bool = True,
    unpriced_agents: Collection[str] = (),
    judge_unpriced: bool = False,
    ungated: Collection[str] = (),
) -> PublishedRelease:
    """Score a release, commit its warehouse tables, gate it, write ``scores.json`` (last), then promote it.

    ``kind`` is ``release``, ``nightly``, ``catalog-change`` or ``adhoc``; ``judge`` is the ``judge`` object of
    ``scores.json`` (``model``, ``polls``, ``rubric_version``; None when the judge did not run); ``scores`` are
    the task scores when already computed (the Dagster ``task_scores`` asset), else they are computed here.
    Scoring is columnar (:func:`~toolchoice_pipeline.scoring.columnar.score_release`: DuckDB over the
    ``agent_calls`` and ``judge_votes`` tables this function commits) for every release size; the per-model
    scores come from the ``task_scores`` table the same way.
    With ``promote=False`` promotion is left to the caller (the Dagster ``baseline`` asset, after the blocking
    gate check); a forced re-run of a promoted release that no longer qualifies is withdrawn either way.
    ``unpriced_agents`` (model strings) and ``judge_unpriced`` mark costs counted at 0 for want of a price
    (:func:`~toolchoice_pipeline.scoring.summary.mark_unpriced`: ``agent_cost_unpriced``, ``judge_cost_unpriced``).
    ``ungated``: the models reported without gating the release (``gate: false``, :mod:`.gate_scope`).
    Also writes ``releases/<id>/gate.md``. Raises :class:`InputError` when the id belongs to a finished
    release and ``force`` is False.
    """
    store, warehouse = ReleaseStore(data_dir), Warehouse(data_dir)
    agent_calls = agent_calls_table(episodes, lineage, suite)
    judge_votes = judge_votes_table(votes, lineage)
    if scores is None:
        columnar = score_release(suite, agent_calls, judge_votes)
        task_scores, models = with_lineage("task_scores", columnar.task_scores, lineage), columnar.models
    else:
        task_scores = task_scores_table(scores, lineage)
        models = summarise_columnar(task_scores)
    models = mark_unpriced(models, agents=unpriced_agents, judge=judge_unpriced)
    tables = {
        "task_scores": task_scores,
        "release_scores": release_scores_table(models, lineage),
        "agent_calls": agent_calls,
        "judge_votes": judge_votes,
        "tool_catalog": tool_catalog_table(suite, lineage),
    }
    # Two runs of one release id at once: the second to get here finds the first's scores.json (refused
    # without --force) instead of silently replacing a release that had just finished.
    with store.publishing_lock(lineage.release_id):
        store.check_release_id_free(lineage.release_id, force)
        # A release without scores.json never finished: replacing its tables needs no --force.
        # Out of the views until scores.json is written: the views never list a release the CLI calls unfinished.
        commit = warehouse.write_release(lineage, tables, kind=kind, replace=True, published=False)
        gate, baseline_models = regate(data_dir, lineage.release_id, models=models, suite=suite.name, ungated=ungated)
        document = ReleaseDocument(
            release_id=lineage.release_id,
            kind=kind,
            suite=suite.name,
            catalog_version=lineage.catalog_version,
            fixture_version=suite.fixture_version,
            judge=judge,
            baseline_release_id=gate.baseline_release_id,
            run_id=lineage.run_id,
            evaluated_at=datetime.now(UTC).isoformat(timespec="seconds"),
            match_profile=suite.match_profile,
            models=models,
            gate=gate.to_json(),
        )
        markdown = gate_markdown(gate, models, baseline_models, suite.name)
        store.write_file(lineage.release_id, GATE_MARKDOWN_FILE, markdown)
        try:
            # On an object store nothing else keeps two writers of a new release apart (no lock between machines).
            path = store.write_scores(document, only_if_absent=store.remote and not force)
        except FileExistsError:
            raise InputError(
                Problem(
                    file=display_path(store.scores_path(lineage.release_id)),
                    field="release_id",
                    message=f"release '{lineage.release_id}' was finished meanwhile by another writer "
                    "(use --force to replace it)",
                )
            ) from None
        warehouse.publish(lineage.release_id)
    qualifies = _promotable(document)
    if not qualifies and store.was_promoted(suite.name, lineage.release_id):
        store.withdraw(suite.name, lineage.release_id)
    promoted = store.promote(lineage.release_id) if promote else False
    return PublishedRelease(
        scores=document, gate=gate, promoted=promoted, commit=commit, scores_path=path, gate_markdown=markdown
    )


def score_records(
    suite: Suite, lineage: Lineage, episodes: Iterable[Episode], votes: Iterable[JudgeVote] = ()
) -> list[TaskScore]:
    """The task scores of a release's episodes and votes, computed on the columnar path publishing uses
    (:func:`~toolchoice_pipeline.scoring.columnar.score_release`), one per episode. Raises :class:`InputError`
    naming the suite's tasks file when an episode's task is not in the suite."""
    columnar = score_release(suite, agent_calls_table(episodes, lineage, suite), judge_votes_table(votes, lineage))
    return [TaskScore.model_validate(row) for row in columnar.task_scores.to_pylist()]


def write_junit(path: Path, gate: GateResult, suite: str | None = None) -> None:
    """Write the gate's JUnit XML to ``path`` (atomically)."""
    write_file_atomically(Path(path), gate_junit_xml(gate, suite))
