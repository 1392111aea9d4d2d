"""Every command and option is documented (sqlite-utils' docs test): each visible command and
option has help text, the README names each command (``memrepo <command>``) and each of its
options, and each command's --help ends with examples. It walks whatever commands exist, so
a command added without docs fails here."""
from __future__ import annotations

import ast
import importlib.util
import re
from pathlib import Path

import pytest
import typer

from memrepo.cli.app import app, main

ROOT = Path(__file__).resolve().parent.parent
# The README is the map; docs/ holds the reference: a command or option named in either counts.
MAP = (ROOT / "README.md").read_text(encoding="utf-8")
DOCS = {p.name: p.read_text(encoding="utf-8") for p in sorted((ROOT / "docs").glob("*.md"))}
README = "\n".join([MAP, *DOCS.values()])


def commands(group=None, path=()):
    group = group or typer.main.get_command(app)
    for name, command in sorted(getattr(group, "commands", {}).items()):
        if command.hidden:
            continue
        yield (*path, name), command
        yield from commands(command, (*path, name))


COMMANDS = list(commands())
OPTIONS = [(path, command, p) for path, command in COMMANDS for p in command.params
           if getattr(p, "param_type_name", "") == "option" and not p.hidden]


def test_the_walk_finds_the_commands():
    names = {" ".join(path) for path, _ in COMMANDS}
    assert {"add", "search", "proposals", "proposals push", "hooks install"} <= names
    assert "hook" not in names  # the internal group is hidden


@pytest.mark.parametrize("path, command", COMMANDS, ids=[" ".join(p) for p, _ in COMMANDS])
def test_command_has_help_and_is_in_the_readme(path, command):
    assert (command.help or "").strip(), f"memrepo {' '.join(path)} has no help text (its docstring)"
    assert f"memrepo {' '.join(path)}" in README, f"the README never shows 'memrepo {' '.join(path)}'"


@pytest.mark.parametrize("path, command, option", OPTIONS, ids=[f"{' '.join(p)} {o.opts[0]}" for p, _, o in OPTIONS])
def test_option_has_help_and_is_in_the_readme(path, command, option):
    name = max(option.opts, key=len)
    assert (option.help or "").strip(), f"memrepo {' '.join(path)} {name} has no help text"
    assert name in README, f"the README never mentions {name} (an option of memrepo {' '.join(path)})"


@pytest.mark.parametrize("path", [p for p, _ in COMMANDS], ids=[" ".join(p) for p, _ in COMMANDS])
def test_help_ends_with_examples(path, capsys):
    assert main([*path, "--help"]) == 0
    out = capsys.readouterr().out
    tail = out[out.rfind("Examples:"):] if "Examples:" in out else ""
    assert f"memrepo {' '.join(path)}" in tail, f"memrepo {' '.join(path)} --help ends without examples"


def test_the_check_fails_for_an_undocumented_command():
    extra = typer.Typer()

    @extra.command("frobnicate")
    def frobnicate(level: int = typer.Option(1)):
        pass

    found = [(p, c) for p, c in commands(typer.main.get_command(extra))] or [(("frobnicate",), typer.main.get_command(extra))]
    for path, command in found:
        assert f"memrepo {' '.join(path)}" not in README
        assert not (command.params[0].help or "")


@pytest.mark.parametrize("path, command", [(p, c) for p, c in COMMANDS if not hasattr(c, "commands") or c.callback],
                         ids=[" ".join(p) for p, c in COMMANDS if not hasattr(c, "commands") or c.callback])
def test_every_command_takes_json(path, command):
    from memrepo.cli.app import NO_JSON
    if " ".join(path) in NO_JSON:
        return
    assert any("--json" in p.opts for p in command.params), f"memrepo {' '.join(path)} has no --json"


def _unfenced(text: str) -> list[str]:
    """The lines of a markdown text outside its fenced code blocks."""
    out, fenced = [], False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
        elif not fenced:
            out.append(line)
    return out


def _sections() -> list[tuple[str, list[str]]]:
    """The README's ``##`` sections in order, each with its ``###`` headings."""
    out: list[tuple[str, list[str]]] = []
    for line in _unfenced(MAP):
        if line.startswith("## "):
            out.append((line[3:].strip(), []))
        elif line.startswith("### ") and out:
            out[-1][1].append(line[4:].strip())
    return out


def test_the_readme_sections_follow_the_contents_list():
    contents = MAP[MAP.index("## Contents"):]
    contents = contents[:contents.index("\n## ", 1)]
    listed = [anchor for anchor in re.findall(r"^- \[[^\]]+\]\(#([a-z0-9-]+)\)", contents, re.M)]
    anchors = [re.sub(r"[^a-z0-9 -]", "", title.lower()).replace(" ", "-") for title, _ in _sections()]
    assert [a for a in anchors if a in listed] == listed, "the ## sections are not in the Contents order"


def test_the_agents_guide_holds_all_its_parts():
    """The agents' guide is one page: each per-turn command and each way in has its section there."""
    headings = [line[3:].strip() for line in _unfenced(DOCS["agents.md"]) if line.startswith("## ")]
    for part in ("recall", "context", "Claude Code hooks", "flush", "prune", "MCP server", "Background server",
                 "OpenClaw"):
        assert any(h.startswith(part) for h in headings), f"docs/agents.md has no '## {part}' section"


def test_the_readme_is_a_map():
    """The README is short: what memrepo is, the two commands, the tour, and links to docs/."""
    lines = MAP.splitlines()
    assert len(lines) <= 400, f"README.md has {len(lines)} lines; move the detail into docs/"
    assert "make demo" in "\n".join(lines[:12]) and "make test" in "\n".join(lines[:12])


# --- no document outside the repository ---------------------------------------------------------

# Words that point a reader at something the repository does not hold: the product brief and the
# style guide, the seed documents, the issue tracker, the person who merges, the folder beside it.
OUTSIDE = [
    (re.compile(r"\bDESIGN\b"), "the design brief"),
    (re.compile(r"\bSTYLE\.md\b"), "the style guide"),
    (re.compile(r"\bLIBRARIES\.md\b"), "the library notes"),
    (re.compile(r"\bseeds? ?0\d\d\b|\bthe seed'?s?\b(?! of)", re.I), "a seed document"),
    (re.compile(r"\bissues? #?\d+", re.I), "an issue number"),
    (re.compile(r"\b[Ll]ead's\b|\(lead[,;)]|\b[Tt]he lead\b(?! of| in)"), "the lead"),
    (re.compile(r"\bshared/"), "a folder outside the repository"),
]
SCANNED = [ROOT / "README.md", ROOT / "Makefile", *sorted((ROOT / "docs").rglob("*.md")),
           *(p for top in ("memrepo", "tests", "bench", "scripts", "hooks", "claude-code-plugin", "template-vault",
                           "schema")
             for p in sorted((ROOT / top).rglob("*")) if p.is_file() and p.suffix in (".py", ".md", ".sh", ".json",
                                                                                       ".toml", ".yaml", ".txt", "")
             and "__pycache__" not in p.parts and "out" not in p.relative_to(ROOT).parts[:2])]
# The benchmark kit (the public LoCoMo and MADial-Bench dev halves and the synthetic generator) is
# read at run time from beside the project, never copied in: a bench script may name its folder
# when it says which data it reads and what to do without it.
KIT = re.compile(r"\.\./shared/bench\b|\bshared\W+bench\b")


def outside_references(path: Path, text: str) -> list[str]:
    found = []
    bench_script = path.parent == ROOT / "bench" and path.suffix == ".py"
    for number, line in enumerate(text.splitlines(), 1):
        for pattern, what in OUTSIDE:
            for match in pattern.finditer(line):
                if what.startswith("a folder") and bench_script and KIT.search(line):
                    continue
                found.append(f"{path.relative_to(ROOT)}:{number}: {match.group(0)!r} points at {what}: say the thing itself")
    return found


@pytest.mark.parametrize("path", SCANNED, ids=lambda p: str(p.relative_to(ROOT)))
def test_nothing_points_outside_the_repository(path):
    if path == Path(__file__):
        return  # the patterns themselves
    text = path.read_text(encoding="utf-8", errors="replace")
    assert not outside_references(path, text), "\n".join(outside_references(path, text))


def test_the_outside_check_can_fail():
    probe = ROOT / "memrepo" / "probe.py"
    for text in ("see DESIGN.md §4", "(seed 003 §4)", "issue 12 targets", "the lead's rerun", "../shared/STYLE.md",
                 "the seed's checklist", "as issues 11, 12 say"):
        assert outside_references(probe, text), text
    for text in ("a random seed of 1", "seeded k-means", "a needle's lead",
                 "shared pool", "the shared vault"):
        assert not outside_references(probe, text), text


@pytest.mark.parametrize("path", sorted((ROOT / "bench").glob("*.py")), ids=lambda p: p.name)
def test_a_bench_that_reads_the_kit_names_it_and_what_to_do_without_it(path):
    text = path.read_text(encoding="utf-8")
    if not KIT.search(text):
        return
    doc = ast.get_docstring(ast.parse(text)) or ""
    assert re.search(r"LoCoMo|MADial|synthetic", doc), f"{path.name} reads the benchmark kit but its docstring names no dataset"
    assert re.search(r"absent|missing|not found|without it", doc), \
        f"{path.name} reads the benchmark kit but its docstring does not say what to do when it is absent"


# --- links -------------------------------------------------------------------------------------

LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")


def relative_links(text: str) -> list[str]:
    """The targets of the markdown links in ``text`` that are files of this repository (not URLs,
    not anchors on the same page), outside code."""
    found = []
    for line in _unfenced(text):
        line = re.sub(r"`[^`]*`", "", line)
        for target in LINK.findall(line):
            if not re.match(r"[a-z][a-z0-9+.-]*:|#", target):
                found.append(target)
    return found


@pytest.mark.parametrize("path", [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), ROOT / "bench" / "RESULTS.md"],
                         ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_points_at_a_file(path):
    broken = [t for t in relative_links(path.read_text(encoding="utf-8"))
              if not (path.parent / t.split("#", 1)[0]).exists()]
    assert not broken, f"{path.relative_to(ROOT)} links to files that do not exist: {broken}"


def test_the_link_check_can_fail():
    assert relative_links("see [x](docs/nope.md), [y](https://e.org), [z](#here), ![i](docs/img/a.png)\n"
                          "```\n[not](a-link.md)\n```\n") == ["docs/nope.md", "docs/img/a.png"]
    assert not (ROOT / "docs/nope.md").exists()


# --- the layer diagram -------------------------------------------------------------------------

def _architecture():
    """tests/test_architecture.py as a module: its RANK table is the one the diagram draws."""
    spec = importlib.util.spec_from_file_location("memrepo_architecture_table", ROOT / "tests" / "test_architecture.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def layer_diagram(arch=None) -> str:
    """The package's layers, top to bottom, drawn from the architecture test's tables (RANK, VALUES,
    ENTRY, INTERFACE, BETWEEN_INTERFACES): the block docs/how-it-works.md shows."""
    arch = arch or _architecture()
    by_rank: dict[float, list[str]] = {}
    for name, rank in arch.RANK.items():
        by_rank.setdefault(rank, []).append(name)

    def where(name: str) -> str:
        if name == "values":
            return "memrepo/{" + ",".join(sorted(arch.VALUES)) + "}.py, memrepo/__init__.py"
        if name == "entry":
            return ", ".join(f"memrepo/{m}.py" for m in sorted(arch.ENTRY))
        if name == "api":
            return "memrepo/api.py"
        return f"memrepo/{name}/"

    rows = []
    for rank in sorted(by_rank, reverse=True):
        names = sorted(by_rank[rank])
        rows.append(f"{rank:<5g}{' | '.join(names):<20}{', '.join(where(n) for n in names)}")
        if rank:
            rows.append(f"{'':5}↓")
    interfaces = ", ".join(sorted(arch.INTERFACE - {"entry"}))
    between = ", ".join(sorted(module for _layer, module in arch.BETWEEN_INTERFACES))
    return "\n".join([
        "rank layer               modules",
        *rows,
        "",
        "A module imports only from rows below its own; layers on one row never import each other.",
        f"The interfaces ({interfaces}) import only memrepo/api.py, the values and their own package;",
        f"the command line also imports, to start them: {between}.",
    ])


DIAGRAM = re.compile(r"<!-- layers: [^>]*-->\n```text\n(.*?)\n```", re.S)


def test_the_layer_diagram_is_the_architecture_tests_table():
    text = DOCS["how-it-works.md"]
    found = DIAGRAM.search(text)
    assert found, "docs/how-it-works.md has no layer diagram block (<!-- layers: ... --> then ```text)"
    expected = layer_diagram()
    assert found.group(1) == expected, ("the layer diagram in docs/how-it-works.md is not the architecture "
                                        "test's table; replace the block with:\n" + expected)


def test_the_layer_diagram_follows_the_table():
    """A layer added to the architecture test's table appears in the drawing (so the check above fails)."""
    arch = _architecture()
    arch.RANK = {**arch.RANK, "frobnicate": 4.7}
    assert "frobnicate" in layer_diagram(arch) and "frobnicate" not in layer_diagram()


if __name__ == "__main__":
    print(layer_diagram())
