"""Every module path, file path, relative link and ``toolchoice`` command that README.md and docs/*.md name
exists: the docs cannot point at a module that was renamed, a file that was removed or a command that is gone.
The same for the modules and names the package's and the tests' module docstrings cite (``toolchoice_pipeline.<module>``,
and Sphinx roles relative to the module, ``:mod:`.<sibling>```)."""

from __future__ import annotations

import ast
import functools
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


# --- module docstrings -----------------------------------------------------------------------------------------

DOTTED = re.compile(r"\btoolchoice_pipeline(?:_tests)?(?:\.\w+)+")
RELATIVE_ROLE = re.compile(r":(?:mod|func|class|data|meth|attr|exc):`~?(\.[\w.]+)`")
SOURCES = sorted([*REPO.glob("toolchoice_pipeline/**/*.py"), *REPO.glob("toolchoice_pipeline_tests/*.py")])


@functools.cache
def _top_level_names(path: Path) -> frozenset[str]:
    """The names a module defines or imports at its top level (an ``if TYPE_CHECKING:`` block's too), and the
    names of a lazy re-export table (``"name": ".module"``, util/lazy.py)."""
    text = path.read_text(encoding="utf-8")
    names: set[str] = set(re.findall(r'^\s+"(\w+)": "[.\w]+",$', text, flags=re.M))
    for node in ast.parse(text).body:
        for item in node.body if isinstance(node, ast.If) else [node]:
            if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                names.add(item.name)
            elif isinstance(item, ast.Assign | ast.AnnAssign):
                targets = item.targets if isinstance(item, ast.Assign) else [item.target]
                names.update(n.id for target in targets for n in ast.walk(target) if isinstance(n, ast.Name))
            elif isinstance(item, ast.Import | ast.ImportFrom):
                names.update((alias.asname or alias.name).split(".")[0] for alias in item.names)
    return frozenset(names)


def _dotted_name_exists(name: str) -> bool:
    """A module (file or package) of the repository, or a name its top level defines (``module.NAME``); a
    class's attribute (``module.Class.attr``) is taken on trust."""
    parts = name.split(".")
    for cut in range(len(parts), 0, -1):
        base = REPO.joinpath(*parts[:cut])
        source = base / "__init__.py" if (base / "__init__.py").exists() else base.with_suffix(".py")
        if source.exists():
            rest = parts[cut:]
            return not rest or (len(rest) <= 2 and rest[0] in _top_level_names(source))
    return False


def _docstring_references() -> list[tuple[str, str]]:
    """``(file, dotted name)`` for every module name a module docstring cites, relative roles made absolute."""
    found = []
    for path in SOURCES:
        doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")), clean=False) or ""
        package = list(path.relative_to(REPO).with_suffix("").parts[:-1])
        shown = str(path.relative_to(REPO))
        found += [(shown, name.rstrip(".")) for name in DOTTED.findall(doc)]
        for relative in RELATIVE_ROLE.findall(doc):
            up = len(relative) - len(relative.lstrip(".")) - 1  # "." is this package, ".." its parent
            found.append((shown, ".".join([*package[: len(package) - up], relative.lstrip(".")])))
    return found


def test_module_docstrings_cite_enough_names_for_this_check_to_mean_something():
    assert len(_docstring_references()) >= 50


def test_every_module_and_name_a_module_docstring_cites_exists():
    assert [(path, name) for path, name in _docstring_references() if not _dotted_name_exists(name)] == []


def test_the_docstring_check_catches_a_module_that_does_not_exist():
    assert _dotted_name_exists("toolchoice_pipeline.scoring.columnar.score_release")
    assert _dotted_name_exists("toolchoice_pipeline.scoring.tsq_of")  # a lazy re-export
    assert not _dotted_name_exists("toolchoice_pipeline.scoring.summary.summarise")  # moved to the tests
    assert not _dotted_name_exists("toolchoice_pipeline.providers.offline_judge.offline")
