"""``waza view``: a read-only local web app over a directory of results files.

One module per job: :mod:`.index` finds and indexes files while they grow,
:mod:`.facts` reduces a record to the numbers a list shows, :mod:`.svg` draws
charts on the server, :mod:`.html` holds the page frame, :mod:`.pages`,
:mod:`.compare_page` and :mod:`.calibration_page` render the pages, and
:mod:`.server` wires routes, security headers and uvicorn together.
"""
