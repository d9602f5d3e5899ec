"""The in-kernel agent: tools bound to a Session, the pydantic-ai Agent, decisions, scripts.

Nothing heavy is imported here: pydantic-ai loads only when an agent is first used.
"""
