"""The live backend: a notebook edited in its JupyterLab collaboration room (``document``)."""
