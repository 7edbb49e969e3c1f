"""The version of cigeval (recorded with every result)."""

__version__ = "0.2.0"
