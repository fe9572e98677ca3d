"""A report for other tools as JSON: the whole report with its verdict, answers and costs,
keys sorted, its shape versioned (`REPORT_SCHEMA_VERSION`).

Each variant's row is written once, in `variants`; everywhere else it appears (a comparison's
entry, an axis entry and its reference, a change, a reused run) it is its index in
`variants`. A variant is in a dozen comparisons, and writing its row in each made the output
grow with the comparisons rather than the variants: 10,000 variants wrote 360 MB. A row
`variants` does not hold, a baseline's, is written whole where it appears."""

import io
import json
import math
from collections.abc import Mapping
from dataclasses import fields
from datetime import datetime
from functools import cache
from typing import TYPE_CHECKING, cast

from pydantic import BaseModel

from contract.instant import instant_text
from report.analysis import analyse
from report.cheapest import cheapest_line
from report.control import control_line
from report.intervals import Ratio
from report.model import REPORT_SCHEMA_VERSION, Report, VariantRow
from report.summary import answer_line

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

Indexes = Mapping[int, int]
"""The position in `variants` of each row it holds, by the row's identity."""


def _plain(value: object, rows: Indexes) -> object:
    """`value` as JSON's types: a row `rows` holds as its index, any other object as its
    fields; an unbounded interval's end (JSON has no infinity) as null."""
    if isinstance(value, str | int | float | None):
        return None if isinstance(value, float) and not math.isfinite(value) else value
    if isinstance(value, list | tuple):
        return [_plain(item, rows) for item in value]
    if isinstance(value, VariantRow) and id(value) in rows:
        return rows[id(value)]
    if isinstance(value, Ratio) and not value.bounded:
        # 0 to infinity, or one round's point, is no interval: both ends null, not 0.
        return _fields(value, rows) | {"low": None, "high": None}
    if isinstance(value, BaseModel | datetime | Mapping):
        return _converted(value, rows)
    return _fields(cast("DataclassInstance", value), rows)


def _converted(value: BaseModel | datetime | Mapping[str, object], rows: Indexes) -> object:
    if isinstance(value, BaseModel):
        # Pydantic's own dump, as the models are written everywhere else.
        return value.model_dump(mode="json", exclude_none=True)
    if isinstance(value, datetime):
        return instant_text(value)
    return {key: _plain(item, rows) for key, item in value.items()}


def _fields(value: "DataclassInstance", rows: Indexes) -> dict[str, object]:
    return {name: _plain(getattr(value, name), rows) for name in _names(type(value))}


@cache
def _names(kind: type["DataclassInstance"]) -> tuple[str, ...]:
    return tuple(field.name for field in fields(kind))


def to_json(report: Report) -> str:
    """The whole report, keys sorted, for other tools; `schema_version` says its shape."""
    analysis = analyse(report)
    rows = {id(row): index for index, row in enumerate(report.variants)}
    document = {
        "schema_version": REPORT_SCHEMA_VERSION,
        "control": [
            _fields(answer, rows) | {"sentence": control_line(answer)}
            for answer in analysis.control
        ],
        "cheapest_holders": [
            _fields(holder, rows) | {"sentence": cheapest_line(holder)}
            for holder in analysis.cheapest
        ],
        "verdict": _plain(analysis.verdict, rows),
        "answers": [
            _fields(answer, rows) | {"sentence": answer_line(answer)} for answer in analysis.answers
        ],
        "costs": _plain(analysis.costs, rows),
        "params": _plain(analysis.params, rows),
        **_fields(report, rows),
        "variants": [_fields(row, {}) for row in report.variants],
    }
    # Written chunk by chunk: the encoder's list of chunks, which json.dumps joins, took
    # 300 MiB for 10,000 variants (its 7 million strings), the text alone 60.
    text = io.StringIO()
    for chunk in json.JSONEncoder(sort_keys=True, indent=2, allow_nan=False).iterencode(document):
        text.write(chunk)
    text.write("\n")
    return text.getvalue()
