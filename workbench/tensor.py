"""Tensors and pointers: from_dlpack, make_ptr, make_tensor, dynamic marking."""
__all__: list[str] = []
