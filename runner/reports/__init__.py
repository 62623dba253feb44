"""Reports for people: Markdown, CSV, JUnit XML and single-file HTML."""
