"""Established agent benchmarks as suites: Harbor task folders and Terminal-Bench 1.x folders.

The modules each do one job: ``environment`` is the interface every place a
task runs in implements (``host`` here, others beside it), ``host`` runs a trial
under bubblewrap over the host's system, ``dockerfile`` reads what a Dockerfile
asks (for environments that do not build it), ``formats`` holds the two folder
formats as msgspec Structs, ``task_files`` reads a task folder bounded and
without following symlinks, ``loader`` turns a folder (a task, a dataset,
Terminal-Bench 1.x tasks) into :class:`~waza.runner.benchmarks.tasks.BenchTask`,
``rewards`` reads a verifier's verdict, ``trial`` runs one trial (agent, then
verifier), ``run`` runs tasks x trials and writes the results, and
``validate`` classifies tasks with the oracle and nop agents.
"""
