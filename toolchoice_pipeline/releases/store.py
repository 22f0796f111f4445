"""The release store: ``releases/<id>/scores.json`` and ``gate.md``, and the baseline (promotion, withdrawal).

Publishing a release (score → commit → gate → ``scores.json``) is :mod:`.publish`; gating against a baseline
:mod:`.gating`; re-gating a stored release :mod:`.regate`; the warehouse tables of a release :mod:`.release_tables`.

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
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from filelock import FileLock
from pydantic import ValidationError

from toolchoice_pipeline.releases.document import GateDocument, ReleaseDocument
from toolchoice_pipeline.releases.gate import gate_markdown
from toolchoice_pipeline.releases.gating import gate_against, stored_noise
from toolchoice_pipeline.releases.object_store import is_remote, read_whole, releases_root, write_whole
from toolchoice_pipeline.releases.request import RELEASE_ID
from toolchoice_pipeline.releases.warehouse import Warehouse
from toolchoice_pipeline.suites import read_once
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


#: What :mod:`~toolchoice_pipeline.suites.read_once` holds a parsed ``scores.json`` as, keyed by
#: :func:`document_key`.
DOCUMENT_KIND = "release_document"


def document_key(path: Path) -> str:
    return str(Path(path).resolve())


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
        if is_remote(path):
            path.fs.invalidate_cache(path.path)  # another machine may have written it since
        return path.is_file()

    def read_scores(self, release_id: str) -> ReleaseDocument:
        """The stored ``scores.json``; raises :class:`InputError` for an unknown, incomplete or broken release,
        naming the field that is missing or malformed. Parsed once while
        :func:`~toolchoice_pipeline.suites.read_once.inputs_read_once` is active and the file is unchanged (a
        ``toolchoice run`` reads its baseline's document once)."""
        path = self.scores_path(release_id)
        if self.remote or not read_once.active():
            return self._read_scores(path, release_id)
        key = document_key(path)
        found = read_once.held(DOCUMENT_KIND, key)
        if found is not None:
            return found
        files = read_once.signature([path])
        return read_once.hold(DOCUMENT_KIND, key, files, self._read_scores(path, release_id))

    def _read_scores(self, path: Path, release_id: str) -> ReleaseDocument:
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

    def _promote_on_object_store(self, scores: ReleaseDocument) -> tuple[bool, ReleaseDocument]:
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
            if not promotable(scores):
                return False, scores
            if self._append_record(scores.suite, len(records), "promote", release_id):
                return True, scores
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

    def promote(self, release_id: str, scores: ReleaseDocument | None = None) -> bool:
        """Make a finished release its suite's baseline if its kind is ``release`` and its gate passed against
        the baseline in force now (see :meth:`promote_document`; ``scores``: its document when already in hand,
        else ``scores.json`` is read). Returns whether it is now the baseline."""
        return self.promote_document(scores or self.read_scores(release_id))[0]

    def promote_document(self, scores: ReleaseDocument) -> tuple[bool, ReleaseDocument]:
        """Promote the finished release ``scores`` describes: ``(promoted, its document now)``.

        Gating and promotion are one step under the store's lock: a release gated against another baseline
        than the one in force (two releases of a suite running at once: the other was promoted meanwhile) is
        gated again against it first (with the noise mode it was gated with), and its ``scores.json`` and
        ``gate.md`` say so; the document returned is then the re-gated one. Raises :class:`InputError` for a
        damaged baseline record or baseline document.
        """
        if scores.kind != PROMOTABLE_KIND:
            return False, scores
        if self.remote:
            return self._promote_on_object_store(scores)
        with self._lock():
            in_force = self.baseline_for(scores.suite, scores.release_id)
            if in_force != scores.baseline_release_id:
                scores = self._regate_against(scores, in_force)
            if not promotable(scores):
                return False, scores
            baselines = self._baselines()
            entry = baselines["suites"].setdefault(scores.suite, {"history": []})
            entry["history"] = [e for e in entry["history"] if e["release_id"] != scores.release_id]
            entry["history"].append(
                {"release_id": scores.release_id, "promoted_at": datetime.now(UTC).isoformat(timespec="seconds")}
            )
            entry["release_id"] = scores.release_id
            self._write_baselines(baselines)
        return True, scores

    def _regate_against(self, scores: ReleaseDocument, baseline_id: str | None) -> ReleaseDocument:
        """``scores`` gated again against ``baseline_id`` with the settings it was gated with (its gate's noise
        mode and models not gated, never the live ``toolchoice.yaml``); ``scores.json`` and ``gate.md``
        rewritten."""
        baseline = self.read_scores(baseline_id) if baseline_id is not None else None
        gate = gate_against(
            self.data_dir,
            scores.release_id,
            scores.models,
            scores.suite,
            baseline,
            noise=stored_noise(scores),
            ungated=scores.gate.not_gated if scores.gate is not None else (),
            baseline_file=display_path(self.scores_path(baseline_id)) if baseline_id is not None else "<baseline>",
        )
        baseline_models = baseline.models if baseline is not None else None
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
        if not promoted and promotable(scores):
            what += " whose gate passed but which is not the baseline"
        raise InputError(
            Problem(
                file=display_path(self.scores_path(release_id)),
                field="release_id",
                message=f"release '{release_id}' is {what}; use --force to re-run it "
                f"(finished by Dagster run {scores.run_id or 'unknown'})",
            )
        )


def promotable(scores: ReleaseDocument) -> bool:
    """Whether a finished release (its ``scores.json``) may be a baseline: kind ``release``, its gate passed, and
    its judge calibration does not block promotion (failed with ``judge.calibration: fail``)."""
    calibration = scores.judge.calibration if scores.judge is not None else None
    return (
        scores.kind == PROMOTABLE_KIND
        and scores.gate_passed
        and not (calibration is not None and calibration.blocks_promotion)
    )


_promotable = promotable  # its name before the split (issue 26)

#: Names that moved out of this module when it was split by job (issue 26), still importable from here.
_MOVED = {
    "GATE_COLUMNS": "toolchoice_pipeline.releases.gating",
    "write_junit": "toolchoice_pipeline.releases.gating",
    "regate": "toolchoice_pipeline.releases.regate",
    "PublishedRelease": "toolchoice_pipeline.releases.publish",
    "publish_release": "toolchoice_pipeline.releases.publish",
    "score_records": "toolchoice_pipeline.releases.release_tables",
}


def __getattr__(name: str) -> Any:
    """A moved name (:data:`_MOVED`), imported from its module on first use (PEP 562)."""
    module = _MOVED.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)
