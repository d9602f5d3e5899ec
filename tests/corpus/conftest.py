# The corpus is data for tests/test_corpus.py, not notebooks for nbval to run.
collect_ignore_glob = ["*.ipynb"]
