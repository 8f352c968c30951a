"""Launching kernels: argument specs (args.py), the C launcher (_launch.c), specializations and dispatch (launch.py),
NVRTC/cupy (cupy.py), the compile cache (cache.py) and resource limits (limits.py)."""
