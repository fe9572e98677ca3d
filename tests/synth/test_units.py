"""Quantities and durations, parsed exactly."""

from decimal import Decimal

import pytest

from synth.fields import parse_duration
from synth.quantity import parse_quantity


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("2", Decimal(2)),
        ("500m", Decimal("0.5")),
        ("1.5", Decimal("1.5")),
        ("4Gi", Decimal(4 * 2**30)),
        ("512Mi", Decimal(512 * 2**20)),
        ("1G", Decimal(10**9)),
        ("1e3", Decimal(1000)),
        ("100k", Decimal(100_000)),
    ],
)
def test_quantity_value(text: str, value: Decimal) -> None:
    assert parse_quantity(text) == value


@pytest.mark.parametrize("text", ["4GB", "two", "", "1.2.3", "Gi", "5 Gi"])
def test_quantity_rejects_what_kubernetes_rejects(text: str) -> None:
    with pytest.raises(ValueError, match="not a Kubernetes quantity"):
        parse_quantity(text)


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        (90, 90.0),
        (0.5, 0.5),
        ("90s", 90.0),
        ("5m", 300.0),
        ("1h30m", 5400.0),
        ("250ms", 0.25),
        ("1m30s", 90.0),
        ("1.5s", 1.5),
    ],
)
def test_duration_in_seconds(text: str | float, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["5q", "", "m", "1d", "s5"])
def test_duration_rejects_other_forms(text: str) -> None:
    with pytest.raises(ValueError, match="not a duration"):
        parse_duration(text)
