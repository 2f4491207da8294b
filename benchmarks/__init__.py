"""Benchmarks: each compares with a baseline measured in the same run; results go to release/benchmarks/."""
