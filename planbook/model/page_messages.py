"""The kinds of message a page sends its kernel about the notebook it holds, where the page is
the notebook (no collaboration): shared by the page backend, which reads them, and the comm,
which routes them there instead of to the review's decisions."""

#: The ``type`` of every message the page sends about its document.
PAGE_TYPES = frozenset({"cells", "applied", "refused"})
