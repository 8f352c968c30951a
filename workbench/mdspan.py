"""mdspan views that mirror CCCL (issue 4)."""
__all__: list[str] = []
