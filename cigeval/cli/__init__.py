"""The ``cigeval`` command line; :func:`main` is its entry point."""

from cigeval.cli.main import build_parser, main

__all__ = ["build_parser", "main"]
