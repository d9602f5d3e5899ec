"""The ``planbook`` command (main.py is its entry point)."""
