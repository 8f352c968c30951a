"""Overhead measurement for the CLI, notebooks and benchmarks/."""
