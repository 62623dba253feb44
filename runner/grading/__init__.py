"""Grading: grader specs, the runners (in-process, process, worker pools), module graders, the Python host, LLM judges."""
