"""Build a vault's memory vectors in a detached process: ``python -m memrepo.retrieval.vectors_build ROOT``.

Started by an import or a reindex once the keyword index is ready (they leave it a plan of
the memories they read: :mod:`memrepo.retrieval.vector_plan`), and by a search that finds no
vectors in a large vault (the search answers on keywords meanwhile). The build holds the
vectors' write lock, so searches see it as "building" (with its progress); a second start
while one runs waits for the lock and then finds the vectors ready. Killed, it leaves what it
encoded and its plan: the next build resumes from there.
"""
from __future__ import annotations

import sys
from pathlib import Path


def main(argv: list[str]) -> int:
    from memrepo.retrieval import embed, semantic
    from memrepo.retrieval.vectors import VectorsBusy
    from memrepo.store.vault import Vault
    vault = Vault(Path(argv[0]))
    store = semantic.vector_store(vault)
    if store.building():
        return 0
    try:
        semantic.background_build(vault)
    except VectorsBusy:
        return 0
    except embed.ModelUnavailable as e:   # searches answer "unavailable" instead of starting builds
        semantic.note_model_failure(vault, str(e))
        return 1
    return 0


if __name__ == "__main__":
    main(sys.argv[1:])
