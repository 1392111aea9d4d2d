"""Teams of agents: private and shared memory, write proposals, citations, sync: several
agents on one vault, one source of truth instead of an island of memory each."""
