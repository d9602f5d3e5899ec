"""The review panel's Python side: diffs, the JSON view and the action messages."""
