"""Where the files that ship beside the code live: the schema, the vault template, the hooks.

In a source checkout (or an editable install) they are the top-level ``schema/``,
``template-vault/`` and ``hooks/`` folders; a wheel carries copies under ``_resources/``.
"""
from __future__ import annotations

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent


def resource(name: str) -> Path:
    """Path of a shipped top-level folder (``schema``, ``template-vault`` or ``hooks``)."""
    for candidate in (_PACKAGE.parent / name, _PACKAGE / "_resources" / name):
        if candidate.exists():
            return candidate
    raise FileNotFoundError(f"memrepo is installed without its {name!r} folder; reinstall it")


def schema_path() -> Path:
    return resource("schema") / "memory.schema.json"
