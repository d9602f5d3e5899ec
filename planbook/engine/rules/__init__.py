"""Permission rules, the shell parser and classifier, protected settings, files that run later:
what may change without review."""
