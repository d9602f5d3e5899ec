"""The review panel: an anywidget (panel.py) and the state and actions it carries."""
