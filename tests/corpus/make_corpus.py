"""Build the test corpus: notebooks with the traits real repositories have.

Run ``python tests/corpus/make_corpus.py`` to write them next to this script. Each is written
the way the tool that makes such notebooks writes it (the style is part of the trait), with
the standard library's json, not with planbook. See README.md for what each one stands for.
"""

from __future__ import annotations

import base64
import json
import random
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
RNG = random.Random(10)


def lines(text: str) -> list[str]:
    return text.splitlines(True)


def png(size: int) -> str:
    return base64.b64encode(b"\x89PNG\r\n\x1a\n" + RNG.randbytes(size)).decode()


def code(
    source: str, outputs: list[dict[str, Any]] | None = None, n: int | None = None, **meta: Any
) -> dict[str, Any]:
    return {
        "cell_type": "code",
        "execution_count": n,
        "metadata": meta,
        "outputs": outputs or [],
        "source": lines(source),
    }


def markdown(source: str, **extra: Any) -> dict[str, Any]:
    return {"cell_type": "markdown", "metadata": {}, "source": lines(source), **extra}


def stream(text: str) -> dict[str, Any]:
    return {"name": "stdout", "output_type": "stream", "text": lines(text)}


def jupyter(nb: dict[str, Any]) -> str:
    """nbformat's writer: indent 1, sorted keys, UTF-8 as is, final newline."""
    return json.dumps(nb, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def notebook(cells: list[dict[str, Any]], minor: int, **metadata: Any) -> dict[str, Any]:
    return {"cells": cells, "metadata": metadata, "nbformat": 4, "nbformat_minor": minor}


KERNEL = {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"}}


def build() -> dict[str, str]:
    files: dict[str, str] = {}
    files["v40_legacy_signature.ipynb"] = jupyter(
        notebook(
            [
                markdown("# An old notebook\n\nFrom the IPython 3 days."),
                code(
                    "import math\nmath.pi",
                    [
                        {
                            "data": {"text/plain": ["3.141592653589793"]},
                            "execution_count": 1,
                            "metadata": {},
                            "output_type": "execute_result",
                        }
                    ],
                    1,
                ),
                code("print('done')", [stream("done\n")], 2),
            ],
            0,
            signature="sha256:3f1f0a4b8e3e2bd1c4b0b4c2ee6b7a1d0f2c9c3e8a7d6b5c4f3e2d1c0b9a8f7e",
            **KERNEL,
        )
    )
    files["v44_widgets.ipynb"] = jupyter(
        notebook(
            [
                code(
                    "import ipywidgets as w\nw.IntSlider(5)",
                    [
                        {
                            "data": {
                                "application/vnd.jupyter.widget-view+json": {
                                    "model_id": "8f1c",
                                    "version_major": 2,
                                    "version_minor": 0,
                                },
                                "text/plain": ["IntSlider(value=5)"],
                            },
                            "execution_count": 1,
                            "metadata": {},
                            "output_type": "execute_result",
                        }
                    ],
                    1,
                ),
                code("x = 2\ny = x * 3", n=2),
            ],
            4,
            widgets={
                "application/vnd.jupyter.widget-state+json": {
                    "state": {
                        "8f1c": {
                            "model_module": "@jupyter-widgets/controls",
                            "model_name": "IntSliderModel",
                            "state": {"value": 5},
                        }
                    },
                    "version_major": 2,
                    "version_minor": 0,
                }
            },
            **KERNEL,
        )
    )
    colab = {
        "nbformat": 4,
        "nbformat_minor": 0,
        "metadata": {
            "colab": {"provenance": [], "name": "colab_two_space.ipynb"},
            "kernelspec": {"name": "python3", "display_name": "Python 3"},
            "language_info": {"name": "python"},
        },
        "cells": [
            {
                "cell_type": "markdown",
                "source": ["# Colab-style notebook\n", "Two spaces."],
                "metadata": {"id": "title0"},
            },
            {
                "cell_type": "code",
                "source": ["a = [1, 2, 3]\n", "sum(a)"],
                "metadata": {"id": "sum0", "outputId": "abc-1"},
                "execution_count": 1,
                "outputs": [
                    {
                        "output_type": "execute_result",
                        "data": {"text/plain": ["6"]},
                        "metadata": {},
                        "execution_count": 1,
                    }
                ],
            },
            {
                "cell_type": "code",
                "source": ["print('ok')"],
                "metadata": {"id": "print0"},
                "execution_count": None,
                "outputs": [],
            },
        ],
    }
    files["colab_two_space.ipynb"] = json.dumps(colab, indent=2, ensure_ascii=False)
    files["attachments_raw.ipynb"] = jupyter(
        notebook(
            [
                markdown(
                    "![chart](attachment:chart.png)\n\nA pasted image.",
                    attachments={"chart.png": {"image/png": png(1500)}},
                ),
                {
                    "cell_type": "raw",
                    "metadata": {"raw_mimetype": "text/restructuredtext"},
                    "source": lines(".. note::\n\n   Raw reST for the docs build."),
                },
                code("value = 41 + 1\nvalue", n=None),
            ],
            4,
            **KERNEL,
        )
    )
    files["large_png_outputs.ipynb"] = jupyter(
        notebook(
            [
                code(
                    f"plot({i})",
                    [
                        stream(f"figure {i}\n"),
                        {
                            "data": {
                                "image/png": png(60_000),
                                "text/plain": ["<Figure size 640x480>"],
                            },
                            "metadata": {"needs_background": "light"},
                            "output_type": "display_data",
                        },
                    ],
                    i + 1,
                )
                for i in range(3)
            ],
            2,
            **KERNEL,
        )
    )
    unicode_nb = notebook(
        [
            markdown("# Données météo 🌦\n\n東京の気温 · درجة الحرارة"),
            code("ville = 'Zürich'\nprint(f'{ville}: 12 °C')", [stream("Zürich: 12 °C\n")], 1),
            code("s = '\\u00e9\\t\\\\n'  # escapes in the source", n=2),
        ],
        3,
        **KERNEL,
    )
    files["unicode_text.ipynb"] = jupyter(unicode_nb)
    files["unicode_ascii_escaped.ipynb"] = (
        json.dumps(unicode_nb, indent=1, sort_keys=True, ensure_ascii=True) + "\n"
    )
    files["custom_metadata_v45.ipynb"] = jupyter(
        notebook(
            [
                {**code("import pandas as pd", n=1, tags=["parameters"]), "id": "setup-1"},
                {**markdown("Results below."), "id": "md-2"},
                {
                    **code(
                        "1 / 0",
                        [
                            {
                                "ename": "ZeroDivisionError",
                                "evalue": "division by zero",
                                "output_type": "error",
                                "traceback": ["\u001b[0;31mZeroDivisionError\u001b[0m"],
                            }
                        ],
                        2,
                        jupyter={"source_hidden": True},
                        custom={"owner": "me"},
                    ),
                    "id": "err-3",
                },
            ],
            5,
            authors=[{"name": "Ada"}],
            papermill={"parameters": {"alpha": 0.1}},
            **KERNEL,
        )
    )
    return files


if __name__ == "__main__":
    for name, text in build().items():
        (HERE / name).write_text(text, encoding="utf-8")
        print(name, len(text.encode()))
