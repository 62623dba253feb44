"""The server child that ``capture --serve-model`` starts (see :func:`waza.runner.model_server.serve.started`)."""

import sys

from waza.runner.model_server.serve import main

main(sys.argv[1:])
