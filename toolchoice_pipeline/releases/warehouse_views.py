"""The warehouse's derived DuckDB views (over the table views of :mod:`.warehouse`), defined with them.

- ``task_rates``: per task over its samples (repeats): samples, scored samples, right rates (fractions).
- ``tool_confusion`` (DESIGN §3 "Tool confusion"): per release and model, ``n`` scored episodes (all samples) that
  expected ``expected_tool`` first (null: no call) and chose ``chosen_tool`` first (null: no call), for every pair
  with expected ≠ chosen; ``expected.any_call`` tasks and releases written before ``expected_tool`` existed are
  left out. The ``confusion`` lists of ``scores.json``, row for row.
- ``tool_scores``: per release, model and tool (null: "no call"), episodes ``expected``, ``chosen``, ``right`` and
  ``precision`` = right / chosen, ``recall`` = right / expected (fractions, null on 0): the ``tools`` lists of
  ``scores.json``. ``right`` is a keyword in DuckDB's SQL: quote it (``SELECT "right" FROM tool_scores``).
"""

from __future__ import annotations

TASK_RATES_VIEW = """
    CREATE OR REPLACE VIEW task_rates AS
    SELECT release_id, suite, catalog_version, run_id, model, task_id, count(*) AS n_samples,
           count(right_tool) AS n_scored, avg(right_tool::INT) AS right_tool_rate,
           avg(right_args::INT) AS right_args_rate
    FROM task_scores GROUP BY ALL"""

_CONFUSION_PAIRS = """
    SELECT release_id, suite, catalog_version, run_id, model, expected_tool, first_tool, count(*) AS n
    FROM task_scores
    WHERE error IS NULL AND right_tool IS NOT NULL AND expected_any_call = false
    GROUP BY ALL"""

TOOL_CONFUSION_VIEW = f"""
    CREATE OR REPLACE VIEW tool_confusion AS
    SELECT release_id, suite, catalog_version, run_id, model, expected_tool, first_tool AS chosen_tool, n
    FROM ({_CONFUSION_PAIRS})
    WHERE expected_tool IS DISTINCT FROM first_tool"""

TOOL_SCORES_VIEW = f"""
    CREATE OR REPLACE VIEW tool_scores AS
    WITH pairs AS ({_CONFUSION_PAIRS}),
         sides AS (
            SELECT release_id, suite, catalog_version, run_id, model, expected_tool AS tool, n AS expected,
                   0 AS chosen, CASE WHEN expected_tool IS NOT DISTINCT FROM first_tool THEN n ELSE 0 END AS "right"
            FROM pairs
            UNION ALL
            SELECT release_id, suite, catalog_version, run_id, model, first_tool AS tool, 0, n, 0 FROM pairs),
         sums AS (
            SELECT release_id, suite, catalog_version, run_id, model, tool, sum(expected)::BIGINT AS expected,
                   sum(chosen)::BIGINT AS chosen, sum("right")::BIGINT AS "right"
            FROM sides GROUP BY ALL)
    SELECT *, CASE WHEN chosen > 0 THEN "right" / chosen END AS precision,
              CASE WHEN expected > 0 THEN "right" / expected END AS recall
    FROM sums"""

DERIVED_VIEWS = (TASK_RATES_VIEW, TOOL_CONFUSION_VIEW, TOOL_SCORES_VIEW)
