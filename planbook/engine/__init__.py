"""The engine: staging, approval, execution, checkpoints and persistence, on the document protocol."""
