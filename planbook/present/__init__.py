"""The present floor: plans, steps, checkpoints and diffs as views and text for the surfaces; no
I/O, nothing changes."""
