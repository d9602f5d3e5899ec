"""Pure data: operations, steps, plans, checkpoints and the stored state. No I/O here."""
