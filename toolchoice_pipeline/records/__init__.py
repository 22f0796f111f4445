"""The typed records that flow between the stages: a model's reply normalised to tool calls (``calls``), an
episode with its steps, a judge vote and a task score (``episodes``), and what a judge model is shown
(``judge_input``).

May import: ``util``.
"""
