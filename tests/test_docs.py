"""Every command and option is documented (sqlite-utils' docs test): each visible command and
option has help text, the README names each command (``memrepo <command>``) and each of its
options, and each command's --help ends with examples. It walks whatever commands exist, so
a command added without docs fails here."""
from __future__ import annotations

from pathlib import Path

import pytest
import typer

from memrepo.cli.app import app, main

ROOT = Path(__file__).resolve().parent.parent
# The README is the map; docs/ holds the reference: a command or option named in either counts.
MAP = (ROOT / "README.md").read_text(encoding="utf-8")
README = "\n".join([MAP, *(p.read_text(encoding="utf-8") for p in sorted((ROOT / "docs").glob("*.md")))])


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


def _sections() -> list[tuple[str, list[str]]]:
    """The README's ``##`` sections in order, each with its ``###`` headings."""
    out: list[tuple[str, list[str]]] = []
    fenced = False
    for line in MAP.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and line.startswith("## "):
            out.append((line[3:].strip(), []))
        elif not fenced and line.startswith("### ") and out:
            out[-1][1].append(line[4:].strip())
    return out


def test_the_readme_sections_follow_the_contents_list():
    contents = MAP[MAP.index("## Contents"):]
    contents = contents[:contents.index("\n## ", 1)]
    import re
    listed = [anchor for anchor in re.findall(r"^- \[[^\]]+\]\(#([a-z0-9-]+)\)", contents, re.M)]
    anchors = [re.sub(r"[^a-z0-9 -]", "", title.lower()).replace(" ", "-") for title, _ in _sections()]
    assert [a for a in anchors if a in listed] == listed, "the ## sections are not in the Contents order"


def test_the_agents_section_holds_all_its_parts():
    """Teams once sat between flush and prune, splitting the Agents guide in two."""
    agents = dict(_sections())["Agents"]
    for part in ("recall", "context", "Claude Code hooks", "flush", "prune", "MCP server", "OpenClaw"):
        assert any(h.startswith(part) for h in agents), f"### {part} is not under ## Agents"
