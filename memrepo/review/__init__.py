"""Review: risk routing, writes, proposals and their apply/reject, provenance and rollback, validation and hooks."""
