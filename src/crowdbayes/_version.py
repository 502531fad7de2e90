"""The package version (read by the model file header and the package root)."""

__version__ = "0.1.0"
