"""The grader conformance kit (`waza graders check`)."""
