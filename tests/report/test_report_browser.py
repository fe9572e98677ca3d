"""The HTML report as a browser shows it: headless Chromium (Debian's chromium-headless-shell)
loads the one file, with nothing else reachable, renders it at a fixed viewport and reports no
console error; the page has every section of the report and every plot. Pixels are not
compared with a golden image (fonts differ between machines); the structure is."""

import html
import re
import shutil
import subprocess
from pathlib import Path
from typing import Final

import pytest
from matplotlib.image import imread

from report.analysis import analyse
from report.html import to_html
from report.layout import lay_out
from report.model import Report
from tests.report.test_report import hostile, make_run, sweep  # noqa: F401 - fixtures

CHROMIUM: Final = "chromium-headless-shell"
VIEWPORT: Final = (1280, 2400)

pytestmark = pytest.mark.skipif(
    shutil.which(CHROMIUM) is None,
    reason=f"needs {CHROMIUM}: apt-get install -y {CHROMIUM}, as root (.ci/run does)",
)


def chromium(page: Path, *arguments: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            CHROMIUM,
            "--no-sandbox",  # tests run as root in CI's container
            "--disable-gpu",
            "--enable-logging=stderr",
            "--hide-scrollbars",
            f"--window-size={VIEWPORT[0]},{VIEWPORT[1]}",
            *arguments,
            page.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )


@pytest.fixture(scope="module")
def page(hostile: Report, tmp_path_factory: pytest.TempPathFactory) -> Path:  # noqa: F811
    path = tmp_path_factory.mktemp("html") / "report.html"
    path.write_text(to_html(hostile), encoding="utf-8")
    return path


def test_the_rendered_page_has_every_section_and_plot(hostile: Report, page: Path) -> None:  # noqa: F811
    loaded = chromium(page, "--dump-dom")
    headings = re.findall(r"<(?:h2|summary)[^>]*>(.*?)</(?:h2|summary)>", loaded.stdout)
    shown = [html.unescape(re.sub(r"<[^>]+>", "", text)).removeprefix("⚠ ") for text in headings]
    assert shown == [*(table.title for table in lay_out(analyse(hostile)).tables), "Plots"]
    assert loaded.stdout.count('<img src="data:image/png;base64,') == 4
    assert "<figcaption>Speed against accuracy, per model and target:" in loaded.stdout
    assert "CONSOLE" not in loaded.stderr, loaded.stderr


def test_the_screenshot_is_the_viewport_and_not_blank(page: Path, tmp_path: Path) -> None:
    shot = tmp_path / "shot.png"
    chromium(page, f"--screenshot={shot}")
    pixels = imread(shot)
    assert pixels.shape[:2] == (VIEWPORT[1], VIEWPORT[0])
    ink = (pixels[..., :3].min(axis=2) < 0.9).mean()
    assert ink > 0.02
