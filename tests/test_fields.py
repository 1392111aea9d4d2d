"""One declaration of a memory's fields (memrepo.model.FIELDS): the table follows the schema, and
the command line, the MCP server, the import of foreign notes, the merge driver and the catalog
take their fields from it, so a plain field is added in the table and the schema alone."""
from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import typer
from conftest import person_env

from memrepo import model
from memrepo.cli import app
from memrepo.store import catalog, foreign, schema
from memrepo.team import merge

ROOT = Path(__file__).resolve().parent.parent


def _property(name: str) -> dict:
    prop = schema.schema()["properties"][name]
    ref = prop.get("$ref", "")
    return {**schema.schema()["$defs"][ref.rsplit("/", 1)[-1]], **prop} if ref else prop


def test_the_table_follows_the_schema():
    props = schema.schema()["properties"]
    assert [f.name for f in model.FIELDS] == list(props), "the table lists the schema's properties in its order"
    assert {f.name for f in model.FIELDS if f.required} == set(schema.schema()["required"])
    for f in model.FIELDS:
        prop = _property(f.name)
        assert tuple(prop.get("enum", ())) == f.choices, f.name
        assert f.many == (prop.get("type") == "array"), f.name
        assert (f.type == "time") == (prop.get("format") == "date-time"), f.name
        assert (f.type == "number") == (prop.get("type") == "number"), f.name
        assert (f.minimum, f.maximum) == (prop.get("minimum"), prop.get("maximum")), f.name
        assert f.max_length == prop.get("maxLength"), f.name
        assert set(f.agent_choices) <= set(f.choices) and f.merge in ("union", "larger", "newer"), f.name


def test_every_part_takes_its_fields_from_the_table():
    assert foreign._KNOWN == {f.name for f in model.FIELDS if f.foreign}
    assert set(merge.UNION) == {f.name for f in model.FIELDS if f.merge == "union"} and merge.LARGER == ("weight",)
    assert set(catalog._TABLE) == {"path", "blob", "error", *(f.name for f in model.FIELDS if f.catalog)}
    assert set(catalog._ROW) <= set(catalog._TABLE)
    group = typer.main.get_command(app.app)
    for writer in ("add", "propose"):
        options = {p.opts[0] for p in group.commands[writer].params}
        assert {f.flag for f in model.given_by(writer)} <= options, writer
    assert {f.flag for f in model.FIELDS if "add" not in f.given_by} & \
        {p.opts[0] for p in group.commands["add"].params} == set()


def test_a_list_field_merges_by_union_and_weight_by_the_larger():
    base = model.Memory({"id": "m", "tags": ["a"], "weight": 0.2, "subject": "s"})
    ours = base.evolve(tags=["a", "b"], weight=0.3)
    theirs = base.evolve(tags=["a", "c"], weight=0.9)
    merged = merge.merge_memory(base, ours, theirs)
    assert merged.meta["tags"] == ["a", "b", "c"] and merged.meta["weight"] == 0.9


MOOD = '    Field("mood", "text", "How the user felt.", max_length=40, given_by=_ALL, foreign=True),\n'
MOOD_SCHEMA = {"type": "string", "minLength": 1, "maxLength": 40, "pattern": "^[^\\n\\r]*$"}


@pytest.fixture(scope="module")
def with_mood(tmp_path_factory):
    """A copy of memrepo with one more field, written in the table and the schema, nowhere else."""
    pkg = tmp_path_factory.mktemp("mood")
    shutil.copytree(ROOT / "memrepo", pkg / "memrepo", ignore=shutil.ignore_patterns("__pycache__"))
    for folder in ("schema", "template-vault", "hooks"):
        shutil.copytree(ROOT / folder, pkg / folder)
    table = pkg / "memrepo" / "model.py"
    text = table.read_text(encoding="utf-8")
    anchor = '          foreign=True),\n)\nFIELD: dict'
    assert anchor in text, "the table's last line moved: update the test's anchor"
    table.write_text(text.replace(anchor, '          foreign=True),\n' + MOOD + ')\nFIELD: dict'), encoding="utf-8")
    spec = pkg / "schema" / "memory.schema.json"
    data = json.loads(spec.read_text(encoding="utf-8"))
    data["properties"]["mood"] = MOOD_SCHEMA
    spec.write_text(json.dumps(data, indent=2), encoding="utf-8")
    return pkg


def _memrepo(pkg: Path, cwd: Path, *args: str, stdin: str = "") -> subprocess.CompletedProcess:
    env = person_env(PYTHONPATH=str(pkg), MEMREPO_DAEMON="0")
    return subprocess.run([sys.executable, "-m", "memrepo", *args], input=stdin, capture_output=True, text=True,
                          env=env, cwd=cwd)


def test_a_plain_field_added_to_the_table_and_the_schema_is_taken_everywhere(with_mood, tmp_path):
    v = tmp_path / "v"
    assert _memrepo(with_mood, tmp_path, "init", str(v)).returncode == 0
    added = _memrepo(with_mood, tmp_path, "--vault", str(v), "add", "--summary", "Sunny standup", "--mood", "cheerful",
                     "--json")
    assert added.returncode == 0, added.stderr
    path = v / json.loads(added.stdout)["path"]
    assert "mood: cheerful" in path.read_text(encoding="utf-8")
    proposed = _memrepo(with_mood, tmp_path, "--vault", str(v), "--agent", "analyst", "propose", "--subject", "team",
                        "--fact", "morale", "--summary", "high", "--mood", "upbeat", "--json")
    assert proposed.returncode == 0, proposed.stderr
    bad = _memrepo(with_mood, tmp_path, "--vault", str(v), "add", "--summary", "x", "--mood", "m" * 41, "--json")
    assert bad.returncode == 5 and json.loads(bad.stdout)["error"]["problems"][0]["field"] == "mood"
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "standup.md").write_text("---\ntitle: Rainy standup\nmood: gloomy\n---\nBody.\n", encoding="utf-8")
    imported = _memrepo(with_mood, tmp_path, "--vault", str(v), "import", str(notes), "--json")
    assert imported.returncode == 0, imported.stderr
    assert _memrepo(with_mood, tmp_path, "--vault", str(v), "validate").returncode == 0
    found = _memrepo(with_mood, tmp_path, "--vault", str(v), "search", "rainy standup", "--json")
    shown = _memrepo(with_mood, tmp_path, "--vault", str(v), "show", json.loads(found.stdout)["hits"][0]["id"], "--json")
    assert json.loads(shown.stdout)["mood"] == "gloomy"  # a field of memrepo's now, not x-mood
    assert "--mood" in _memrepo(with_mood, tmp_path, "add", "--help").stdout


def test_the_mcp_server_takes_the_added_field(with_mood, tmp_path):
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client
    v = tmp_path / "v"
    assert _memrepo(with_mood, tmp_path, "init", str(v)).returncode == 0
    env = {**person_env(PYTHONPATH=str(with_mood)), "MEMREPO_DAEMON": "0"}
    params = StdioServerParameters(command=sys.executable, args=["-m", "memrepo", "mcp", "--vault", str(v)], env=env,
                                   cwd=str(tmp_path))

    async def main():
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as client:
                await client.initialize()
                tools = {t.name: t for t in (await client.list_tools()).tools}
                written = await client.call_tool("memory_write", {"summary": "Calm retro", "mood": "calm", "source": "tool"})
                refused = await client.call_tool("memory_write", {"summary": "x", "mood": "m" * 41})
                return tools["memory_write"].inputSchema["properties"]["mood"], written, refused
    prop, written, refused = asyncio.run(asyncio.wait_for(main(), 60))
    assert prop["description"] == "How the user felt." and prop["anyOf"][0]["maxLength"] == 40
    assert not written.isError, written.content[0].text
    assert "mood: calm" in (v / json.loads(written.content[0].text)["path"]).read_text(encoding="utf-8")
    assert refused.isError and refused.content[0].text.startswith("memory_write: mood: ")
    assert os.path.isdir(v)
