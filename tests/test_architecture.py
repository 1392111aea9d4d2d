"""Import direction and one owner per outside concern (STYLE.md points 1-3 and 6), read from the AST."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "memrepo"
MODULES = sorted(p for p in PACKAGE.glob("*.py"))
INTERFACE = {"cli.py", "__main__.py", "hook_entry.py"}


def tree(path: Path) -> ast.AST:
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def imports(path: Path) -> set[str]:
    """Every module name imported anywhere in the file (top level or inside functions)."""
    found = set()
    for node in ast.walk(tree(path)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module)
            if node.module == "memrepo":
                found.update(f"memrepo.{alias.name}" for alias in node.names)
    return found


def top(name: str) -> str:
    return name.split(".")[0]


def owners(package: str) -> set[str]:
    return {p.name for p in MODULES if any(top(i) == package for i in imports(p))}


def test_the_modules_were_found():
    names = {p.name for p in MODULES}
    assert {"cli.py", "git.py", "document.py", "schema.py", "vault.py"} <= names


@pytest.mark.parametrize("path", [p for p in MODULES if p.name not in INTERFACE], ids=lambda p: p.name)
def test_library_never_imports_the_cli_or_typer(path):
    bad = {i for i in imports(path) if i == "memrepo.cli" or top(i) in ("typer", "click")}
    assert not bad, f"{path.name} imports {bad}: the library must work without the CLI"


def test_click_is_never_imported_directly():
    assert owners("click") == set()


def test_only_schema_imports_jsonschema():
    assert owners("jsonschema") == {"schema.py"}


def test_only_document_imports_yaml():
    assert owners("yaml") == {"document.py"}


def test_only_the_search_modules_import_whoosh():
    assert owners("whoosh") <= {"index.py", "analysis.py", "text.py"}
    assert owners("whoosh")  # the index exists and is the one owner


def test_gitpython_is_not_used_outside_git_module():
    assert owners("git") <= {"git.py"}


def _runs_git(node: ast.Call) -> bool:
    """A call with a command list/tuple literal whose first element is "git"."""
    for arg in list(node.args[:1]) + [k.value for k in node.keywords if k.arg == "args"]:
        if isinstance(arg, (ast.List, ast.Tuple)) and arg.elts:
            first = arg.elts[0]
            if isinstance(first, ast.Constant) and first.value == "git":
                return True
        if isinstance(arg, ast.Constant) and isinstance(arg.value, str) and arg.value.split()[:1] == ["git"]:
            return True
    return False


@pytest.mark.parametrize("path", [p for p in MODULES if p.name != "git.py"], ids=lambda p: p.name)
def test_only_git_module_runs_git(path):
    calls = [n for n in ast.walk(tree(path)) if isinstance(n, ast.Call)]
    offenders = [n.lineno for n in calls if _runs_git(n)]
    assert not offenders, f"{path.name} runs git itself at lines {offenders}; go through memrepo.git"
    shell = [n.lineno for n in calls if isinstance(n.func, ast.Attribute) and n.func.attr in ("system", "popen")
             and isinstance(n.func.value, ast.Name) and n.func.value.id == "os"]
    assert not shell, f"{path.name} shells out with os.system/os.popen at lines {shell}"


def test_git_module_really_runs_git():
    """The check above can fail: git.py itself is what it would flag."""
    assert any(_runs_git(n) for n in ast.walk(tree(PACKAGE / "git.py")) if isinstance(n, ast.Call))


@pytest.mark.parametrize("path", [p for p in MODULES if p.name not in INTERFACE], ids=lambda p: p.name)
def test_library_never_prints_or_exits(path):
    bad = []
    for node in ast.walk(tree(path)):
        if not isinstance(node, ast.Call):
            continue
        f = node.func
        if isinstance(f, ast.Name) and f.id in ("print", "exit", "quit"):
            bad.append(f"{f.id}() at line {node.lineno}")
        if isinstance(f, ast.Attribute) and f.attr in ("exit", "_exit") and isinstance(f.value, ast.Name) \
                and f.value.id in ("sys", "os"):
            bad.append(f"{f.value.id}.{f.attr}() at line {node.lineno}")
    assert not bad, f"{path.name}: {bad}; return values or raise memrepo.errors, the CLI prints and exits"


# Storage and values never reach up into services or domain modules (STYLE.md point 3).
ALLOWED = {
    "errors.py": set(),
    "model.py": {"errors"},
    "resources.py": set(),
    "document.py": {"errors"},
    "schema.py": {"errors", "resources"},
    "secretscan.py": {"errors"},
    "checks.py": {"document", "schema", "secretscan", "errors", "model"},
    "git.py": {"errors"},
    "lock.py": {"errors"},
    "config.py": {"errors"},
    "catalog.py": {"document", "git", "checks", "errors", "model"},
}


@pytest.mark.parametrize("name", sorted(ALLOWED))
def test_lower_layers_only_import_below_themselves(name):
    used = {i.split(".")[1] for i in imports(PACKAGE / name) if i.startswith("memrepo.")}
    assert used <= ALLOWED[name], f"{name} imports {sorted(used - ALLOWED[name])}, which sit above it"
