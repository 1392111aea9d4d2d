"""Teams of agents: private and shared memory, write proposals, citations, sync (seed 003 §4)."""
