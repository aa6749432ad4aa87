"""``python -m r2med`` runs the CLI."""

from .cli import main

main()
