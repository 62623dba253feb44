"""Confining an agent under evaluation: bubblewrap's view of the host (``bwrap``), per-agent limits
(``limits`` and the ``limiter`` launcher) and the loopback relay to a model server (``relay``).

It sits with the adapters because starting an agent is theirs; the runner also confines a grader command
that runs the agent's work, and a benchmark task's environment, with the same view.
"""
