"""Git hooks: ``hooks install``, and the hidden ``hook`` commands git's hooks (and the
pre-commit framework) run."""
from __future__ import annotations

import typer

from memrepo import api
from memrepo.cli import call, hook_entry, params
from memrepo.cli.output import out

app = typer.Typer()
hooks_app = typer.Typer(help="Install or run memrepo's git hooks.", rich_markup_mode=None, no_args_is_help=True,
                        epilog=params.examples("memrepo hooks install"))
hook_app = typer.Typer(help="Entry points git hooks call (used by the installed shims).", rich_markup_mode=None)
app.add_typer(hooks_app, name="hooks")
app.add_typer(hook_app, name="hook", hidden=True)


@hooks_app.command("install", epilog=params.examples("memrepo hooks install"))
def hooks_install(as_json: bool = params.JSON):
    """Install the pre-commit and pre-merge-commit hooks (an existing hook is kept as .legacy)."""
    with call.vault() as vault:
        lines = api.install_hooks(vault)
        notes = api.fetch_records(vault)  # a fresh clone takes the review records it lacks
    out({"installed": lines, "notes": notes}, as_json, "\n".join(lines + notes))


@hook_app.command("pre-commit")
def hook_pre_commit():
    """Validate what is staged (run by git)."""
    return hook_entry.pre_commit()


@hook_app.command("pre-merge-commit")
def hook_pre_merge_commit():
    """Validate a merge before git records it (run by git)."""
    return hook_entry.pre_commit()
