"""The in-cell review's channel between the kernel and the JupyterLab / Notebook 7 extension."""
