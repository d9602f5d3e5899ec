"""Where the notebook lives: memory, a file on disk, or a live collaboration room."""
