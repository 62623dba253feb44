"""Eval suites: ``eval.yaml`` plus task files and trigger tests, checked and run.

The modules each do one job: ``located`` reads YAML keeping every value's line,
``validate`` checks a file against its hand-written JSON Schema, ``models`` holds
the suite as msgspec Structs, ``loader`` builds them (and every grader) from the
files, ``fixtures`` fills a trial's workspace, ``expected`` turns a task's
``expected:`` block into graders, ``execute`` runs the trials, ``triggers`` the
trigger tests, ``metrics`` scores the run, ``document`` builds the result
document, and ``reporters`` renders it as JUnit XML and Markdown.
"""
