"""The built-in offline judge model (``local/catalog-judge``): it reads the judge input the ChainPoll judge
sends (``records.judge_input``) and votes by how well the chosen tools fit the request (``fit``), which tools
the request names (``mentions``) and whether the arguments are well formed (``arguments``). Entry point:
:func:`model.catalog_judge`.

May import: ``util``, ``records``, ``suites``.
"""
