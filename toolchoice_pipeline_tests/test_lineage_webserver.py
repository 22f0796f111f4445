"""The lineage users see in the UI: ``dagster-webserver`` started from the repo root with ``-w workspace.yaml``
(as ``dagster dev`` would), queried over GraphQL for the asset graph, the blocking gate check, the schedule and
the sensor. The test starts the webserver on 127.0.0.1 at a free port with a temporary DAGSTER_HOME and a
copy of ``data/`` (12 of the demo's tasks), and always stops the processes it started."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
import urllib.error
import urllib.request

import pytest

from toolchoice_pipeline_tests.pipeline_helpers import ASSET_CHAIN, BIN, REPO, copy_data, free_port, trim_tasks

pytestmark = pytest.mark.slow

READY_TIMEOUT_S = 120
STOP_TIMEOUT_S = 20


def _get(url: str) -> bytes | None:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.read() if response.status == 200 else None
    except (urllib.error.URLError, ConnectionError, TimeoutError):
        return None


def graphql(base: str, query: str) -> dict:
    request = urllib.request.Request(
        f"{base}/graphql", data=json.dumps({"query": query}).encode(), headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        body = json.loads(response.read())
    assert "errors" not in body, body
    return body["data"]


def _stop(process: subprocess.Popen) -> None:
    """SIGTERM to the process group the webserver leads (it and its code server), SIGKILL on timeout."""
    if process.poll() is not None:
        return
    os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=STOP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=STOP_TIMEOUT_S)


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """The webserver's base URL, its DAGSTER_HOME and its data directory."""
    root = tmp_path_factory.mktemp("webserver")
    home = root / "dagster_home"
    home.mkdir()
    data_dir = copy_data(root / "data")
    trim_tasks(data_dir, 12)  # the release materialised here needs no more
    env = {
        **os.environ,
        "DAGSTER_HOME": str(home),
        "TOOLCHOICE_DATA_DIR": str(data_dir),
        "DAGSTER_DISABLE_TELEMETRY": "yes",
    }
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    log = (root / "webserver.log").open("w")
    process = subprocess.Popen(
        [str(BIN / "dagster-webserver"), "-h", "127.0.0.1", "-p", str(port), "-w", "workspace.yaml"],
        cwd=REPO,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + READY_TIMEOUT_S
        while _get(f"{base}/server_info") is None:
            assert process.poll() is None, (root / "webserver.log").read_text()
            assert time.monotonic() < deadline, "webserver not ready in time"
            time.sleep(0.5)
        while _location_status(base) != "LOADED":
            assert time.monotonic() < deadline, "code location not loaded in time"
            time.sleep(0.5)
        yield {"base": base, "home": home, "data_dir": data_dir}
    finally:
        _stop(process)
        log.close()


@pytest.fixture(scope="module")
def webserver(served) -> str:
    return served["base"]


def _location_status(base: str) -> str | None:
    data = graphql(
        base,
        "{ workspaceOrError { ... on Workspace { locationEntries { name loadStatus "
        "locationOrLoadError { __typename ... on PythonError { message } } } } } }",
    )
    entries = data["workspaceOrError"]["locationEntries"]
    [entry] = entries
    assert entry["locationOrLoadError"] is None or entry["locationOrLoadError"]["__typename"] != "PythonError", entry
    return entry["loadStatus"]


def test_server_info_reports_the_installed_dagster(webserver):
    import dagster

    info = json.loads(_get(f"{webserver}/server_info"))
    assert info["dagster_version"] == dagster.__version__


def test_the_ui_shows_the_lineage_from_the_suite_files_to_baseline(webserver):
    nodes = graphql(
        webserver,
        "{ assetNodes { assetKey { path } dependencyKeys { path } groupName isPartitioned "
        "isObservable isMaterializable partitionDefinition { name type } kinds opVersion "
        "description } }",
    )["assetNodes"]
    by_name = {"/".join(n["assetKey"]["path"]): n for n in nodes}
    assert set(by_name) == {"suite_files", *ASSET_CHAIN}
    parents = {name: {"/".join(d["path"]) for d in node["dependencyKeys"]} for name, node in by_name.items()}
    for upstream, downstream in zip(ASSET_CHAIN, ASSET_CHAIN[1:]):
        assert upstream in parents[downstream], f"{upstream} → {downstream} not in the UI's graph"
    assert parents["release_snapshot"] == {"suite_files"} and parents["suite_files"] == set()
    source = by_name.pop("suite_files")
    assert source["isObservable"] and not source["isMaterializable"] and source["groupName"] == "suites"
    assert source["partitionDefinition"] is None and not source["isPartitioned"]
    for node in by_name.values():
        assert node["groupName"] == "release" and node["isPartitioned"]
        assert node["partitionDefinition"] == {"name": "release", "type": "DYNAMIC"}
        assert node["kinds"] and node["opVersion"] and node["description"]


def test_the_ui_shows_release_gate_as_the_blocking_check_on_release_scores(webserver):
    nodes = graphql(
        webserver,
        "{ assetNodes { assetKey { path } assetChecksOrError { __typename "
        "... on AssetChecks { checks { name blocking description } } } } }",
    )["assetNodes"]
    checks = {
        (tuple(n["assetKey"]["path"]), c["name"]): c["blocking"]
        for n in nodes
        for c in n["assetChecksOrError"]["checks"]
    }
    assert checks[(("release_scores",), "release_gate")] is True
    assert [key for key, blocking in checks.items() if blocking] == [(("release_scores",), "release_gate")]
    assert (("release_scores",), "judge_calibration") in checks


def test_the_ui_shows_the_schedule_and_the_sensor_running(webserver):
    data = graphql(
        webserver,
        "{ repositoriesOrError { ... on RepositoryConnection { nodes { name "
        "schedules { name cronSchedule executionTimezone scheduleState { status } } "
        "sensors { name sensorState { status } } } } } }",
    )
    [repository] = data["repositoriesOrError"]["nodes"]
    assert repository["schedules"] == [
        {
            "name": "nightly_eval",
            "cronSchedule": "0 2 * * *",
            "executionTimezone": "UTC",
            "scheduleState": {"status": "RUNNING"},
        }
    ]
    assert repository["sensors"] == [{"name": "catalog_change", "sensorState": {"status": "RUNNING"}}]


SNAPSHOT_ASSETS = ("release_snapshot", "tool_catalog", "eval_tasks")
SNAPSHOT_KEYS = ", ".join(f'{{path: ["{name}"]}}' for name in SNAPSHOT_ASSETS)
STALENESS = (
    "{ assetNodes(assetKeys: [" + SNAPSHOT_KEYS + ']) { assetKey { path } staleStatus(partition: "r1") '
    'dataVersion(partition: "r1") staleCauses(partition: "r1") { key { path } reason } } '
    'source: assetNodes(assetKeys: [{path: ["suite_files"]}]) { assetKey { path } dataVersion } }'
)


def _staleness(base: str) -> dict[str, dict]:
    data = graphql(base, STALENESS)
    return {"/".join(n["assetKey"]["path"]): n for n in data["assetNodes"] + data["source"]}


def test_a_description_edit_shows_stale_in_the_ui_and_the_pin_keeps_the_release(served):
    """Partition r1's first three assets, materialised in the webserver's instance; the suite files observed;
    a description edited and observed again: before any run, the UI marks the release's snapshot stale (cause:
    suite_files), while tool_catalog and eval_tasks stay fresh: they are the pin's. Re-materialising the snapshot
    returns the pin: its data version and tool_catalog's stay, and it stays stale (it still evaluates the old
    catalog); reverting the edit and observing makes it fresh again."""
    import dagster as dg

    from toolchoice_pipeline.definitions import build_definitions
    from toolchoice_pipeline.defs.partitions import RELEASE_PARTITIONS_NAME
    from toolchoice_pipeline.releases.request import ReleaseRequest, write_request
    from toolchoice_pipeline_tests.pipeline_helpers import set_description

    base, data_dir = served["base"], served["data_dir"]
    defs = build_definitions(str(data_dir))
    selection = [dg.AssetKey(name) for name in SNAPSHOT_ASSETS]
    with dg.DagsterInstance.from_config(str(served["home"])) as instance:
        write_request(data_dir, ReleaseRequest(release_id="r1", requested_by="test"))
        instance.add_dynamic_partitions(RELEASE_PARTITIONS_NAME, ["r1"])
        observe = defs.resolve_job_def("observe_suite_files")
        assert observe.execute_in_process(instance=instance).success
        release_job = defs.resolve_job_def("release_job")
        assert release_job.execute_in_process(partition_key="r1", instance=instance, asset_selection=selection).success
        fresh = _staleness(base)
        assert {name: fresh[name]["staleStatus"] for name in SNAPSHOT_ASSETS} == dict.fromkeys(SNAPSHOT_ASSETS, "FRESH")
        pinned_catalog = fresh["tool_catalog"]["dataVersion"]
        observed_before = fresh["suite_files"]["dataVersion"]
        assert observed_before.startswith(f"coding_agent={pinned_catalog}-")

        original = set_description(data_dir, "Read", "Deletes the repository. Never call this.")
        assert observe.execute_in_process(instance=instance).success
        stale = _staleness(base)
        assert stale["suite_files"]["dataVersion"] != observed_before
        assert {name: stale[name]["staleStatus"] for name in SNAPSHOT_ASSETS} == {
            "release_snapshot": "STALE",
            "tool_catalog": "FRESH",
            "eval_tasks": "FRESH",
        }
        assert {"/".join(c["key"]["path"]) for c in stale["release_snapshot"]["staleCauses"]} == {"suite_files"}

        assert release_job.execute_in_process(
            partition_key="r1", instance=instance, asset_selection=[dg.AssetKey("release_snapshot")]
        ).success
        again = _staleness(base)
        assert again["release_snapshot"]["dataVersion"] == fresh["release_snapshot"]["dataVersion"]
        assert again["tool_catalog"]["dataVersion"] == pinned_catalog
        assert {name: again[name]["staleStatus"] for name in SNAPSHOT_ASSETS} == {
            "release_snapshot": "STALE",
            "tool_catalog": "FRESH",
            "eval_tasks": "FRESH",
        }

        set_description(data_dir, "Read", original)
        assert observe.execute_in_process(instance=instance).success
        reverted = _staleness(base)
        assert reverted["suite_files"]["dataVersion"] == observed_before
        assert {name: reverted[name]["staleStatus"] for name in SNAPSHOT_ASSETS} == dict.fromkeys(
            SNAPSHOT_ASSETS, "FRESH"
        )


COLUMNS = (
    '{ assetNodes(assetKeys: [{path: ["task_scores"]}, {path: ["release_scores"]}]) { assetKey { path } '
    "owners { ... on TeamAssetOwner { team } } "
    "metadataEntries { label ... on TableSchemaMetadataEntry { schema { columns { name type } } } "
    "... on TextMetadataEntry { text } } } }"
)
PLOTS = (
    '{ assetOrError(assetKey: {path: ["release_scores"]}) { ... on Asset { assetMaterializations(partitions: '
    '["m1"]) { metadataEntries { label __typename ... on FloatMetadataEntry { floatValue } '
    "... on IntMetadataEntry { intValue } } } } } }"
)


def test_the_ui_shows_columns_row_counts_and_per_model_numbers_to_plot(served):
    """What the Columns and Plots tabs read: the warehouse tables' column schema and table name in the assets'
    definition metadata, and after a release, each model's figures as float entries of release_scores'
    materialisation and its row count as an int entry."""
    import dagster as dg

    from toolchoice_pipeline_tests.pipeline_helpers import materialise, read_scores

    base, data_dir = served["base"], served["data_dir"]
    nodes = {"/".join(n["assetKey"]["path"]): n for n in graphql(base, COLUMNS)["assetNodes"]}
    for name in ("task_scores", "release_scores"):
        entries = {entry["label"]: entry for entry in nodes[name]["metadataEntries"]}
        assert entries["dagster/table_name"]["text"] == f"toolchoice.main.{name}"
        columns = [column["name"] for column in entries["dagster/column_schema"]["schema"]["columns"]]
        assert columns[:4] == ["release_id", "suite", "catalog_version", "run_id"] and "model" in columns
        assert nodes[name]["owners"] == [{"team": "toolchoice"}]
    with dg.DagsterInstance.from_config(str(served["home"])) as instance:
        assert materialise(data_dir, instance, "m1", kind="adhoc", judge=False).success
    [materialisation] = graphql(base, PLOTS)["assetOrError"]["assetMaterializations"]
    entries = {entry["label"]: entry for entry in materialisation["metadataEntries"]}
    models = read_scores(data_dir, "m1")["models"]
    assert entries["dagster/row_count"]["intValue"] == len(models)
    for model, figures in models.items():
        for name in ("right_tool_pct", "right_args_pct", "agent_cost_usd"):
            entry = entries[f"{model}/{name}"]
            assert entry["__typename"] == "FloatMetadataEntry" and entry["floatValue"] == figures[name]
        assert f"{model}/tsq_mean" not in entries  # not judged: no TSQ, rather than a 0 to plot


NIGHTLY_DRY_RUN = (
    'mutation { scheduleDryRun(selectorData: {repositoryLocationName: "toolchoice_pipeline", '
    'repositoryName: "__repository__", scheduleName: "nightly_eval"}, timestamp: %s) { __typename '
    "... on DryRunInstigationTick { evaluationResult { runRequests { runKey tags { key value } } "
    "dynamicPartitionsRequests { partitionKeys } error { message } } } ... on PythonError { message } } }"
)


def test_test_schedule_in_the_ui_changes_nothing(served):
    """The UI's "Test schedule" (GraphQL ``scheduleDryRun``) on nightly_eval, with the suite files edited since
    their last observation: the run request it shows names the nightly partition, and the webserver's instance
    has the same partitions and the same observations of suite_files afterwards; no file is written."""
    from datetime import UTC, datetime

    import dagster as dg

    from toolchoice_pipeline.defs.partitions import RELEASE_PARTITIONS_NAME
    from toolchoice_pipeline.defs.sources import SUITE_FILES, current_files_version, last_observed_version
    from toolchoice_pipeline_tests.pipeline_helpers import set_description

    data_dir = served["data_dir"]
    original = set_description(data_dir, "Grep", "Finds nothing; try Bash instead.")
    try:
        with dg.DagsterInstance.from_config(str(served["home"])) as instance:
            assert last_observed_version(instance) != current_files_version(data_dir)  # an observation would add one
            partitions = instance.get_dynamic_partitions(RELEASE_PARTITIONS_NAME)
            observations = instance.fetch_observations(SUITE_FILES, limit=1000).records
            releases = (
                sorted(p.name for p in (data_dir / "releases").glob("*")) if (data_dir / "releases").exists() else []
            )
            when = datetime(2026, 12, 3, 2, 0, tzinfo=UTC).timestamp()
            result = graphql(served["base"], NIGHTLY_DRY_RUN % when)["scheduleDryRun"]
            assert result["__typename"] == "DryRunInstigationTick", result
            evaluation = result["evaluationResult"]
            assert evaluation["error"] is None, evaluation
            [run] = evaluation["runRequests"]
            assert run["runKey"] == "nightly-2026-12-03"
            assert {"key": "dagster/partition", "value": "nightly-2026-12-03"} in run["tags"]
            assert instance.get_dynamic_partitions(RELEASE_PARTITIONS_NAME) == partitions
            assert instance.fetch_observations(SUITE_FILES, limit=1000).records == observations
            assert (
                sorted(p.name for p in (data_dir / "releases").glob("*")) if (data_dir / "releases").exists() else []
            ) == releases
    finally:
        set_description(data_dir, "Grep", original)
