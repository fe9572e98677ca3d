"""A report for other tools as JSON: the whole report with its verdict, answers and costs,
keys sorted, its shape versioned (`REPORT_SCHEMA_VERSION`)."""

import json
import math
from dataclasses import asdict
from datetime import datetime

from pydantic import BaseModel

from contract.instant import instant_text
from report.analysis import analyse
from report.model import REPORT_SCHEMA_VERSION, Report
from report.summary import answer_line


def _json_default(value: object) -> object:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", exclude_none=True)
    if isinstance(value, datetime):
        return instant_text(value)
    raise TypeError(f"{type(value).__name__} is not part of a report")


def _finite(value: object) -> object:
    """JSON has no infinity: an unbounded interval's end is null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(item) for item in value]
    return value


def to_json(report: Report) -> str:
    """The whole report, keys sorted, for other tools; `schema_version` says its shape."""
    analysis = analyse(report)
    document = _finite(
        {
            "schema_version": REPORT_SCHEMA_VERSION,
            "verdict": asdict(analysis.verdict),
            "answers": [
                asdict(answer) | {"sentence": answer_line(answer)} for answer in analysis.answers
            ],
            "costs": asdict(analysis.costs),
            **asdict(report),
        }
    )
    return (
        json.dumps(document, default=_json_default, sort_keys=True, indent=2, allow_nan=False)
        + "\n"
    )
