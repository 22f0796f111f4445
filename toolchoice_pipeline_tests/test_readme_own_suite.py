"""The README's "Your own suite" section, copied as a new user would (found on the 3.11/3.13 new-user pass: it
showed a task line only, and a guessed `tools:` mapping in catalog.yaml was refused): its suite.yaml, catalog.yaml
and task line make a suite that loads and passes every check."""

from __future__ import annotations

import re
from pathlib import Path

from toolchoice_pipeline.suites.suite import load_suite

README = Path(__file__).parent.parent / "README.md"


def own_suite_blocks() -> list[tuple[str, str]]:
    text = README.read_text(encoding="utf-8")
    section = text[text.index("## Your own suite") :]
    section = section[: section.index("\n## ", 1)]
    return re.findall(r"```(\w+)\n(.*?)```", section, flags=re.S)


def test_the_readme_suite_loads_and_passes_every_check(tmp_path):
    [(suite_kind, suite_yaml), (catalog_kind, catalog_yaml), (task_kind, task_line)] = own_suite_blocks()
    assert (suite_kind, catalog_kind, task_kind) == ("yaml", "yaml", "json")
    name = re.search(r"^name: (\S+)", suite_yaml, flags=re.M).group(1)
    directory = tmp_path / "suites" / name
    directory.mkdir(parents=True)
    (directory / "suite.yaml").write_text(suite_yaml, encoding="utf-8")
    (directory / "catalog.yaml").write_text(catalog_yaml, encoding="utf-8")
    (directory / "tasks.jsonl").write_text(task_line, encoding="utf-8")
    suite = load_suite(tmp_path, name)
    assert [tool.name for tool in suite.curated] == ["Grep", "Glob"]
    [task] = suite.tasks
    assert task.id == "grep-def-001" and task.expected.tool == "Grep"
