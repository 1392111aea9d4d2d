"""Lifecycle: the nightly run, distill (L1 patterns into L2 candidates) and decay (archive, expiry)."""
