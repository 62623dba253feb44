"""The engine: prompts through agents and graders, fan-out, workspaces, outputs, resume, and the Python API."""
