"""Build a vault's memory vectors in a detached process: ``python -m memrepo.retrieval.vectors_build ROOT``.

Started by a search that finds no vectors in a large vault (the search answers on keywords
meanwhile). The build holds the vectors' write lock, so searches see it as "building"; a
second start while one runs waits for the lock and then finds the vectors ready.
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
        semantic.build_vectors(vault)
    except VectorsBusy:
        return 0
    except embed.ModelUnavailable as e:   # searches answer "unavailable" instead of starting builds
        semantic.note_model_failure(vault, str(e))
        return 1
    return 0


if __name__ == "__main__":
    main(sys.argv[1:])
