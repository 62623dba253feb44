"""The I/O underpinnings of waza: child processes, HTTP to models, the model cache, confined file access,
secret masking and logging.

The records and the grader protocol's rules live one level up (``waza.protocol``); what lives here
talks to the operating system and the network on their behalf. Adapters, graders and the runner import
it; it imports nothing of theirs.
"""
