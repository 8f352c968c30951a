"""The two backends of the kernel DSL: CUDA C++ (cuda.py) and the CPU executor (cpu.py); each asks the IR node."""
