"""The shell classifier: read-only only when sure, since a wrong "yes" bypasses plan mode."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from planbook.engine.rules.classifier import classify, is_read_only

READ_ONLY = [
    "ls",
    "ls -la src",
    "cat README.md",
    "head -n 20 data.csv",
    "tail -5 log.txt",
    "wc -l *.py",
    "grep -rn 'def main' planbook",
    "rg TODO --glob '*.py'",
    "find . -name '*.csv'",
    "find . -type f -newer setup.py",
    "pwd",
    "echo hello world",
    "git status",
    "git log --oneline -5",
    "git diff HEAD~1",
    "git show HEAD:README.md",
    "python --version",
    "python3 -V",
    "pip list",
    "pip show pandas",
    "python -m pip list",
    "cat data.csv | head -3",
    "grep -c x a.txt | sort -n | uniq",
    "ls && pwd",
    "ls || echo none",
    "ls; pwd;",
    "grep '>' notes.txt",
    "grep '|' notes.txt",
    "echo 'a; rm -rf /'",
    'echo "a && rm -rf /"',
    "grep -E 'a|b' x.txt",
    "date +%Y",
    "grep x '|' rm y",  # quoted: grep searches files named `|`, `rm` and `y`
    "cat < in.txt",  # reading a named file cannot write
    "ls 2>&1",
    "ls missing 2>/dev/null",
    "ls\npwd",  # several lines: each one parsed and checked
    "  ls -la",
    "ls \\\n-la",  # a continuation between words
    "grep -rn 'a\\|b' .",
]

WRITES = [
    "rm -rf build",
    "touch x",
    "ls > listing.txt",
    "ls >> listing.txt",
    "echo $(rm -rf x)",
    "echo `rm x`",
    "echo $HOME",
    'echo "$(whoami)"',
    "cat <(ls)",
    "diff <(ls a) <(ls b)",
    "ls | tee out.txt",
    "ls | xargs rm",
    "cat x | sh",
    "ls && rm x",
    "ls; rm x",
    "ls & rm x",
    "(ls)",
    "find . -delete",
    "find . -name x -exec rm {} ;",
    "find . -execdir cat x ';'",
    "find . -fprint out.txt",
    "find . -name *.py",
    "sort -o out.txt in.txt",
    "sort -ro out.txt in.txt",
    "sort --out=o.txt in.txt",
    "sort --compress-program=sh big.txt",
    "uniq in.txt out.txt",
    "rg --pre ./evil x",
    "git commit -m x",
    "git push",
    "git -c core.pager=sh log",
    "git diff --output=patch.txt",
    "git diff --ext-diff",
    "git checkout .",
    "python script.py",
    "python -c 'import os'",
    "pip install requests",
    "pip list --log out.txt",
    "date -s 2020-01-01",
    "date 010100002020",
    "/bin/ls",
    "./ls",
    "PAGER=sh git log",
    "ls\nrm x",
    "ls #; rm x",
    "! ls",
    "{ ls; }",
    "echo 'unbalanced",
    'echo "unbalanced',
    "",
    "   ",
    "|",
    "ls | | pwd",
    "ls \\",
    "find . -name '|' -delete",
    # sh joins a backslash-newline inside a word: the classifier must see what sh runs.
    "find . -name a.txt \\\n-exec rm '{}' +",
    "find . \\\n-delete",
    "fi\\\nnd . -delete",
    "r\\\nm x",
    "sort -\\\no out.txt in.txt",
    # options that write or connect
    "uniq - out.txt",
    "uniq -c in.txt out.txt",
    "git log --out=x.txt",
    "git show -O/dev/null",
    "pip list -o",
    "pip list --outdated",
    "pip list -vo",
    "pip list --index-url http://127.0.0.1:1/",
    "python -m pip list --outdated",
    "rg -z x",
    "rg --search-zip x",
    "sort -T /tmp in.txt",
    "ls 1>&3",
    "ls 2>/dev/nul",
    "cat < $X",
    "cat <<< x",
    "cat <<EOF\nx\nEOF",
    "ls ; (rm x)",
    "if true; then ls; fi",
    "for f in a; do ls; done",
    "f() { ls; }",
    "X=1",
]


@pytest.mark.parametrize("command", READ_ONLY)
def test_read_only_commands_are_recognised(command: str) -> None:
    verdict = classify(command)
    assert verdict.read_only, verdict.reason
    assert verdict.reason.startswith("read-only")


@pytest.mark.parametrize("command", WRITES)
def test_anything_unsure_is_a_write(command: str) -> None:
    verdict = classify(command)
    assert not verdict.read_only
    assert verdict.reason  # the person sees why


def test_quoted_pipe_stays_an_argument_and_keeps_the_find_check() -> None:
    # shlex would split this into `find . -name` and `ls -delete` (both "read-only").
    assert not is_read_only("find . -name '|' ls -delete")


def test_reasons_name_the_problem() -> None:
    assert "rm" in classify("rm x").reason
    assert "redirection" in classify("ls > x").reason
    assert "-delete" in classify("find . -delete").reason


# --- properties ---------------------------------------------------------------------------------

_safe_word = st.text(alphabet="abcdefgh.-_/0123456789", min_size=1, max_size=8).filter(
    lambda w: not w.startswith("-")
)
_reader = st.one_of(
    st.builds(
        lambda p, a: f"{p} {a}", st.sampled_from(["ls", "cat", "head", "wc", "grep x"]), _safe_word
    ),
    st.just("pwd"),
    st.just("git status"),
    st.builds(lambda a: f"find {a} -type f", _safe_word),
)
_joiner = st.sampled_from([" | ", " && ", " || ", "; "])


@st.composite
def _read_only_pipeline(draw: st.DrawFn) -> str:
    parts = draw(st.lists(_reader, min_size=1, max_size=4))
    out = parts[0]
    for part in parts[1:]:
        out += draw(_joiner) + part
    return out


@given(_read_only_pipeline())
def test_chains_of_readers_are_read_only(command: str) -> None:
    assert is_read_only(command), classify(command).reason


@given(
    _read_only_pipeline(),
    st.sampled_from(
        [
            " > out",
            " >> out",
            " | rm -rf x",
            " && touch x",
            "; sh",
            " | tee x",
            " $(rm x)",
            " `rm x`",
            " & ls",
            "\nrm x",
            " | xargs rm",
        ]
    ),
)
def test_adding_a_writer_anywhere_makes_it_a_write(command: str, suffix: str) -> None:
    assert not is_read_only(command + suffix)


@given(_read_only_pipeline(), st.sampled_from(["rm x", "touch y", "sh -c ls", "tee z", "mv a b"]))
def test_a_writer_in_front_makes_it_a_write(command: str, writer: str) -> None:
    assert not is_read_only(f"{writer} ; {command}")
    assert not is_read_only(f"{command} | {writer}")


@settings(max_examples=300)
@given(st.text(max_size=60))
def test_never_raises_and_writers_are_never_read_only(text: str) -> None:
    verdict = classify(text)
    if verdict.read_only:
        assert "`" not in text.replace("'`'", "")
        assert not any(tok in {"rm", "sh", "tee", "xargs", ">", ">>"} for tok in text.split())


@settings(max_examples=100)
@given(_read_only_pipeline(), st.integers(min_value=1, max_value=6))
def test_a_continuation_that_splits_a_word_is_read_as_sh_reads_it(command: str, cut: int) -> None:
    # sh removes backslash-newline before it splits words: so must the classifier.
    writer = "find . -delete"
    split = writer[:cut] + "\\\n" + writer[cut:]
    assert not is_read_only(f"{command} && {split}")


def test_many_threads_classify_at_once() -> None:
    # The agent's tools, the panel and the kernel all parse; tree-sitter's parser is not
    # thread-safe, so each thread has its own (one shared parser can crash the interpreter;
    # the race does not show on every run, so this is a smoke test, not a proof).
    from concurrent.futures import ThreadPoolExecutor

    def work(n: int) -> list[bool]:
        return [is_read_only(f"ls dir{n}_{i} | grep x{i} && cat f{i}") for i in range(150)]

    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(work, range(16)))
    assert all(all(r) for r in results)


def test_non_ascii_input_cannot_crash_the_parser() -> None:
    # tree-sitter-bash's scanner crashed the interpreter on this (found by this file's
    # hypothesis test); it runs in a child process so a regression fails one test, not the run.
    import subprocess
    import sys

    crash = "b{\U000e2f37~=Ń;'ɚ)#\\̤<𨷵-\n'\U000938de\U000cd437~Ʒ¾>\U0001dbecʈ\\˭\U00012a91ҳ\U000166bd\U0003ca0a&*(݃\\*(ɱ#\U0005a3dd=֛ü\U000d3c6dر\U000d9a63"  # noqa: E501
    code = "import sys; from planbook.engine.rules.classifier import classify; "
    code += "print(classify(sys.argv[1]).read_only)"
    done = subprocess.run([sys.executable, "-c", code, crash], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-500:]
    assert done.stdout.strip() == "False"
    assert is_read_only("cat 'résumé.txt' | grep ü")
