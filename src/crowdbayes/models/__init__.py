"""Models, one module (or package) per method family."""
