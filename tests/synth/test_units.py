"""Quantities and durations, parsed exactly."""

from decimal import Decimal

import pytest
from pydantic import TypeAdapter, ValidationError

from contract.quantity import parse_quantity
from synth.fields import Duration, Quantity, parse_duration


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


@pytest.mark.parametrize(
    "text", ["4GB", "two", "", "1.2.3", "Gi", "5 Gi", "1e1000", "1e" + "9" * 5000]
)
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


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("-1", "is negative"),
        (-0.5, "is negative"),
        ("9Ei", "more than Kubernetes holds"),
        (1e100, "more than Kubernetes holds"),
        ("100u", "finer than 1m"),
        (0.0001, "finer than 1m"),
        (" 2", "spaces around it"),
        ("2\n", "spaces around it"),
        (True, "not a Kubernetes quantity"),
        (0, "is zero"),
        ("0", "is zero"),
        ("0Gi", "is zero"),
    ],
)
def test_a_quantity_the_api_server_would_refuse_or_round_is_an_error(
    value: object, message: str
) -> None:
    with pytest.raises(ValidationError, match=message):
        TypeAdapter(Quantity).validate_python(value)


@pytest.mark.parametrize("value", ["7Ei", "1.5", "1m", 1, "1"])
def test_a_quantity_within_kubernetes_range_is_kept_as_written(value: object) -> None:
    assert TypeAdapter(Quantity).validate_python(value) == str(value)


@pytest.mark.parametrize(
    ("value", "message"),
    [(True, "not a duration"), ("721h", "longer than 2,592,000 seconds"), (1e300, "longer")],
)
def test_a_duration_that_is_not_one_or_too_long_is_an_error(value: object, message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        TypeAdapter(Duration).validate_python(value)
