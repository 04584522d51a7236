"""``python -m pipeline.cli``: the same as the ``chatmon`` command."""

from pipeline.cli import main

main()
