"""Subcommands of `placement`, one module each (see placement/cli.py)."""
