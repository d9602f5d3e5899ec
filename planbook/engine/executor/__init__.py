"""The executor: runs exactly the approved steps, each behind a checkpoint (see run.py)."""
