"""planbook's version: the one place it is written (the wheel's metadata reads it from here)."""

__version__ = "0.1.0"
