"""The `waza` command line: the typer app, shared options, the event loop and exit codes, one module per command."""
