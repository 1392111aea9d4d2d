"""What an agent runtime plugs in: recall per turn, the session-start context, the
pre-compaction flush, tool-result pruning with evidence, OpenClaw workspaces in and out."""
