"""Every module path, file path, relative link and ``toolchoice`` command that README.md and docs/*.md name
exists: the docs cannot point at a module that was renamed, a file that was removed or a command that is gone."""

from __future__ import annotations

import re
from pathlib import Path

import click

from toolchoice_pipeline.cli import COMMANDS, load_command

REPO = Path(__file__).resolve().parents[1]
DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
# Paths from the repository root that the docs name; benchmarks/work/ and run outputs are made by running things
REPO_ROOTS = ("toolchoice_pipeline/", "toolchoice_pipeline_tests/", "benchmarks/", "docs/", "scripts/", ".ci/")
MADE_BY_RUNNING = ("benchmarks/work/",)
PLACEHOLDER = re.compile(r"[<>*{}$]|\.\.\.")
CODE_SPAN = re.compile(r"`([^`\n]+)`")
LINK = re.compile(r"\]\(([^)#\s]+)")
COMMAND = re.compile(r"\btoolchoice ([a-z][\w-]*)(?: ([a-z][\w-]*))?")


SUBPACKAGES = {path.name for path in (REPO / "toolchoice_pipeline").iterdir() if path.is_dir()}


def _names_our_module_file(token: str, span: str) -> bool:
    """``defs/assets.py`` (a path from the package), or a span that is one file name (``offline.py``); not an
    example path in a task's text (``src/app/main.py``)."""
    if not token.endswith(".py"):
        return False
    return token.split("/")[0] in SUBPACKAGES if "/" in token else span == token


def _references() -> dict[str, list[tuple[str, str]]]:
    """(doc, reference) pairs by kind: ``path``, ``module``, ``link``, ``command``."""
    found: dict[str, list[tuple[str, str]]] = {"path": [], "module": [], "link": [], "command": []}
    for doc in DOCS:
        text = doc.read_text(encoding="utf-8")
        for span in CODE_SPAN.findall(text):
            if PLACEHOLDER.search(span):
                continue
            for token in re.findall(r"[\w./-]+", span):
                token = token.rstrip(".,:;")
                if token.startswith(REPO_ROOTS) and not token.startswith(MADE_BY_RUNNING):
                    found["path"].append((doc.name, token))
                elif re.fullmatch(r"toolchoice_pipeline(\.\w+)+", token) or _names_our_module_file(token, span):
                    found["module"].append((doc.name, token))
            for command in COMMAND.finditer(span):
                found["command"].append((doc.name, " ".join(filter(None, command.groups()))))
        for target in LINK.findall(text):
            if "://" not in target and not target.startswith("mailto:"):
                found["link"].append((doc.name, target))
    return found


def _module_exists(name: str) -> bool:
    """A dotted module, or an attribute of one (``toolchoice_pipeline.cli.COMMANDS``); or a module file named
    from the package (``defs/assets.py``) or by itself (``offline.py``, somewhere in the package or the tests)."""
    if name.endswith(".py"):
        if "/" in name:
            return (REPO / name).exists() or (REPO / "toolchoice_pipeline" / name).exists()
        return any(REPO.glob(f"toolchoice_pipeline*/**/{name}")) or any(REPO.glob(f"benchmarks/**/{name}"))
    parts = name.split(".")
    return any(
        (REPO / ("/".join(parts[:cut]) + ".py")).exists() or (REPO / "/".join(parts[:cut]) / "__init__.py").exists()
        for cut in range(len(parts), 1, -1)
    )


def _command_exists(words: str) -> bool:
    name, *sub = words.split()
    if name not in COMMANDS:
        return False
    command = load_command(name)
    # `toolchoice ingest claude-code`: a group's subcommand must exist; a plain command's next word is an argument
    return (
        not (sub and isinstance(command, click.Group))
        or command.get_command(click.Context(command), sub[0]) is not None
    )


def test_the_docs_name_enough_references_for_this_check_to_mean_something():
    found = _references()
    assert {kind: len(refs) >= 5 for kind, refs in found.items()} == dict.fromkeys(found, True), found


def test_every_path_the_docs_name_exists():
    assert [(doc, path) for doc, path in _references()["path"] if not (REPO / path).exists()] == []


def test_every_module_the_docs_name_exists():
    assert [(doc, module) for doc, module in _references()["module"] if not _module_exists(module)] == []


def test_every_relative_link_in_the_docs_resolves():
    bad = []
    for doc, target in _references()["link"]:
        base = REPO if doc == "README.md" else REPO / "docs"
        if not (base / target).exists():
            bad.append((doc, target))
    assert bad == []


def test_every_toolchoice_command_the_docs_name_exists():
    assert [(doc, words) for doc, words in _references()["command"] if not _command_exists(words)] == []
