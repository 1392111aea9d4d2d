"""Memory CI in a forge: the workflow file that runs ``memrepo validate`` and the recall checks
on every pull (or merge) request of a vault pushed to GitHub, GitLab or Gitea.

The job installs the memrepo that wrote the file (the same version, so the checks answer the
same), validates the vault, and runs ``memrepo check run --ref HEAD --against origin/<base>``,
whose exit code 1 (a check that passes on the base fails on the request) fails the request.
Gitea Actions reads GitHub's workflow format (``.gitea/workflows/`` or ``.github/workflows/``).
"""
from __future__ import annotations

from memrepo.errors import Conflict
from memrepo.store import git
from memrepo.store.vault import Vault

FORGES = ("github", "gitlab")
PATHS = {"github": ".github/workflows/memrepo.yml", "gitlab": ".gitlab-ci.yml"}

_GITHUB = """\
# Memory CI (written by 'memrepo check workflow --github'): on every pull request, validate the
# vault and run its recall checks (checks/*.yaml) on the request against its base branch; a
# check that passes on the base and fails on the request fails the pull request.
name: memrepo
on:
  pull_request:
jobs:
  memory-ci:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
        with:
          fetch-depth: 0
      - uses: actions/setup-python@v5
        with:
          python-version: "3.11"
      - run: python -m pip install "{requirement}"
      - run: memrepo validate
      - run: memrepo check run --ref HEAD --against "origin/${{GITHUB_BASE_REF:-main}}"
"""

_GITLAB = """\
# Memory CI (written by 'memrepo check workflow --gitlab'): on every merge request, validate the
# vault and run its recall checks (checks/*.yaml) on the request against its target branch; a
# check that passes on the target and fails on the request fails the pipeline.
memrepo:
  image: python:3.11
  rules:
    - if: $CI_PIPELINE_SOURCE == "merge_request_event"
  variables:
    GIT_DEPTH: "0"
  script:
    - python -m pip install "{requirement}"
    - git fetch origin "${{CI_MERGE_REQUEST_TARGET_BRANCH_NAME:-main}}"
    - memrepo validate
    - memrepo check run --ref HEAD --against "origin/${{CI_MERGE_REQUEST_TARGET_BRANCH_NAME:-main}}"
"""


def workflow_text(forge: str) -> tuple[str, str]:
    """(path in the vault, text) of the workflow file for ``forge`` (github or gitlab)."""
    from memrepo import __version__
    from memrepo.model import check_choice
    check_choice("forge", forge, FORGES)
    template = _GITHUB if forge == "github" else _GITLAB
    return PATHS[forge], template.format(requirement=f"memrepo=={__version__}")


def write_workflow(vault: Vault, forge: str) -> tuple[str, str | None]:
    """Commit the workflow file on main: (path, commit), commit None when the file is already
    there as written. A different file at that path is left alone (Conflict): merge the job
    into it by hand (``memrepo check workflow --json`` prints the text)."""
    path, text = workflow_text(forge)
    vault.require_main_checkout()
    with vault.lock():
        main = vault.head()
        if main and git.exists(vault.root, f"{main}:{path}"):
            if git.read_blob(vault.root, f"{main}:{path}").decode("utf-8", "replace") == text:
                return path, None
            raise Conflict(f"{path} already exists and differs; add memrepo's job to it by hand "
                           f"('memrepo check workflow --{forge} --json' prints it), nothing was written")
        message = (f"memrepo: add the memory CI workflow ({path})\n\n"
                   f"Runs 'memrepo validate' and the recall checks on every {'pull' if forge == 'github' else 'merge'} "
                   f"request.\n\nMemrepo-Action: check-workflow\n")
        return path, vault.commit(files={path: text.encode("utf-8")}, message=message).commit
