"""Which kind of collaboration a real Jupyter server runs, as the kernel tells it apart: on,
installed but switched off by `--YDocExtension.disable_rtc=True` (its endpoints still answer),
or absent. Only "on" means a page follows the collaboration room."""

from __future__ import annotations

from pathlib import Path

import pytest

from planbook.documents.locate import ServerInfo
from tests.support.jupyter_server import RTC_OFF, start_jupyter

pytestmark = [pytest.mark.server]


@pytest.mark.parametrize(
    ("collaboration", "args", "expected"),
    [
        (True, [], "on"),
        (True, [RTC_OFF], "off"),
        (False, [], "none"),
    ],
)
def test_the_server_says_whether_its_pages_collaborate(
    tmp_path: Path, collaboration: bool, args: list[str], expected: str
) -> None:
    with start_jupyter(tmp_path, collaboration=collaboration, extra_args=args) as server:
        info = ServerInfo(server.url, server.token, server.root)
        assert info.collaboration() == expected
        assert info.has_collaboration() is (expected == "on")
