"""Helpers shared by the end-to-end suites (real Jupyter servers, real kernels)."""
