"""A suite's inputs and the run configuration: tool catalogs and their versions (``catalog``, ``catalog_files``),
eval tasks and the argument-matcher grammar (``tasks``, ``matchers``), loading and validating a suite
(``suite``, ``validate``), replay files (``replay_file``), ``toolchoice.yaml`` (``config``) and the JSON Schemas
of every file format (``formats_schema``).

May import: ``util``, ``records``.
"""
