"""The runner: the thin async core, the commands and the CLI (depends on everything else)."""
