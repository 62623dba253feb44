"""``python -m waza`` runs the same CLI as the ``waza`` console script."""

from waza.runner.cli.app import main

main()
