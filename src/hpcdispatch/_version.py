"""The package version (a module of its own: every layer may read it without importing the package face)."""

__version__ = "0.1.0"
