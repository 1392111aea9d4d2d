"""Storage: the vault on disk and in git, the write path, the derived catalog, documents and the schema."""
