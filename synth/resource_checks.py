"""A target's explicit `requests` and `limits`, checked all at once: each unknown key, each
missing one, and each request above its limit is its own problem, so that three mistakes in
one block are three problems in one run rather than one per run (a misspelled key used to
hide the request above its limit beside it)."""

from collections.abc import Iterator, Mapping
from decimal import Decimal
from typing import Final

from contract.layout import GPU_RESOURCE
from contract.quantity import parse_quantity
from synth.hints import SpecError, closest, unknown
from synth.yaml_source import Loc

RESOURCE_KEYS: Final = ("cpu", "memory", "ephemeral-storage", GPU_RESOURCE)
_REQUIRED: Final = ("cpu", "memory")


def resource_problems(data: object) -> Iterator[tuple[Loc, SpecError]]:
    """Every problem of a Resources mapping as written (before its values are validated,
    whose own errors pydantic reports): where, and what."""
    if not isinstance(data, Mapping):
        return
    for field in ("requests", "limits"):
        values = data.get(field)
        if isinstance(values, Mapping):
            yield from _key_problems(field, values)
    requests, limits = _quantities(data.get("requests")), _quantities(data.get("limits"))
    for key in limits.keys() & requests.keys():
        request, limit = requests[key], limits[key]
        shown_request, shown_limit = data["requests"][key], data["limits"][key]
        if key == GPU_RESOURCE and request != limit:
            yield (
                ("limits", key),
                SpecError(
                    f"{GPU_RESOURCE} request ({shown_request}) and limit ({shown_limit}) differ; "
                    "Kubernetes requires extended resources to be equal",
                    "set gpu_count on the target instead of listing nvidia.com/gpu here",
                ),
            )
        elif request > limit:
            yield (
                ("limits", key),
                SpecError(
                    f"{key} request ({shown_request}) is above its limit ({shown_limit})",
                    "a request may not exceed its limit; raise the limit or lower the request",
                ),
            )


def _key_problems(field: str, values: Mapping[object, object]) -> Iterator[tuple[Loc, SpecError]]:
    meant = set()
    for key in values:
        if key not in RESOURCE_KEYS:
            meant.add(closest(str(key), RESOURCE_KEYS))
            yield (
                (field, str(key)),
                unknown("resource", str(key), RESOURCE_KEYS, where=f"in {field}"),
            )
    # A key misspelled as another is said once: its did-you-mean names the missing one.
    missing = [key for key in _REQUIRED if key not in values and key not in meant]
    if missing:
        yield (
            (field,),
            SpecError(
                f"{field} needs {' and '.join(missing)}",
                "a benchmark without CPU and memory bounds is measured against whatever its "
                "neighbours leave over; set both, or use a preset: small, large, guaranteed",
            ),
        )


def _quantities(values: object) -> dict[str, Decimal]:
    """The entries of a requests or limits mapping that are known keys with quantities; the
    others are problems of their own."""
    if not isinstance(values, Mapping):
        return {}
    found = {}
    for key, value in values.items():
        if key not in RESOURCE_KEYS or isinstance(value, bool):
            continue
        try:
            found[key] = parse_quantity(str(value))
        except ValueError:
            continue
    return found
