"""The agent steps' engine alone: CPU of ``run_suite_sync`` on the peers workload, one model after another as
the run's shards call it, under the collector settings the command uses, with no Dagster around it.

One fresh process per measurement (run it alone: the machine has 2 shared cores); compare two checkouts by
alternating them, e.g. with ``PYTHONPATH=<checkout>``::

    python benchmarks/run/engine_cpu.py                       # 2,000 tasks × 3 sim models, 50 ms, 64 in flight
    python benchmarks/run/engine_cpu.py --cache-policy off    # the same without the call journal

Each measurement writes ``peers.py``'s data directory (the synthetic suite) into a temporary directory, so the
journal starts empty, and prints ``{"episodes": ..., "loop_cpu_s": ...}``: the whole process's CPU (every
thread, ``time.process_time``) from the first call to the last episode; imports (LiteLLM's lazy ones on the
first call aside) and setup left out.
"""

from __future__ import annotations

import gc
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "execution"))

import common  # noqa: E402
from peers import write_data_dir  # noqa: E402


def main() -> None:
    parser = common.argument_parser(__doc__)
    parser.add_argument("--cache-policy", choices=["read_write", "off"], default=None)
    args = parser.parse_args()

    from toolchoice_pipeline.util.collector import BATCH_THRESHOLDS, collector_for_batch

    gc.set_threshold(*BATCH_THRESHOLDS)
    import litellm  # noqa: F401 - imported before the clock starts, as the run's steps find it

    from toolchoice_pipeline.execution.runner import run_suite_sync
    from toolchoice_pipeline.suites.config import load_run_config
    from toolchoice_pipeline.suites.suite import load_suite

    with tempfile.TemporaryDirectory() as scratch:
        data_dir = Path(scratch) / "data"
        suite_dir = write_data_dir(data_dir, args)
        suite, config = load_suite(data_dir, suite_dir.name), load_run_config(data_dir)
        episodes = 0
        with collector_for_batch():
            started = time.process_time()
            for spec in config.models:
                episodes += len(
                    run_suite_sync(suite, config, data_dir=data_dir, models=[spec], cache_policy=args.cache_policy)
                )
            cpu = time.process_time() - started
    print(json.dumps({"episodes": episodes, "loop_cpu_s": round(cpu, 3)}))


if __name__ == "__main__":
    main()
