"""The formats `collector report` writes, by the name its --format takes: a report in each,
and a trend (--trend) in each but CSV. The web pages import matplotlib, which takes a while,
only when a page is asked for."""

from collections.abc import Callable, Mapping
from typing import Final, Literal, TypeVar

from report.csv import to_csv
from report.json import to_json
from report.markdown import to_markdown
from report.model import Report
from report.text import to_text
from report.trend import Trend
from report.trend_render import trend_json, trend_markdown, trend_text

ReportFormat = Literal["text", "markdown", "csv", "json", "html"]

Shown = TypeVar("Shown")
Renderers = Mapping[str, Callable[[Shown], str]]


def _to_html(report: Report) -> str:
    from report.html import to_html  # noqa: PLC0415

    return to_html(report)


def _trend_html(trend: Trend) -> str:
    from report.trend_html import trend_html  # noqa: PLC0415

    return trend_html(trend)


REPORT_RENDERERS: Final[Renderers[Report]] = {
    "text": to_text,
    "markdown": to_markdown,
    "csv": to_csv,
    "json": to_json,
    "html": _to_html,
}
TREND_RENDERERS: Final[Renderers[Trend]] = {
    "text": trend_text,
    "markdown": trend_markdown,
    "json": trend_json,
    "html": _trend_html,
}
