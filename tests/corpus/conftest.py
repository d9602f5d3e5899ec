collect_ignore_glob = ["*.ipynb"]  # the corpus is data for tests/test_corpus.py, not notebooks to run
