"""Everything kept with a release: what it evaluates (``request``), its lineage, the warehouse tables and
their Parquet/DuckDB storage (``warehouse_tables``, ``warehouse``), the typed ``scores.json`` document
(``document``), the regression gate (``gate``, ``gating``, ``regate``), publishing (``publish``,
``release_tables``), the stored release files and the baseline (``store``) and the trend over releases
(``report``).

May import: ``util``, ``records``, ``suites``, ``scoring``.
"""
