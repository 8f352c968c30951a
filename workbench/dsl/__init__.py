"""Kernel DSL (issue 5)."""
__all__: list[str] = []
