"""The engine: staging, approval, execution, checkpoints and persistence, on documents."""
