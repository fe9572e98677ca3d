"""The PromQL of the generated dashboard, as Prometheus would run it: each panel's queries
with the dashboard's variables at "All"."""

import json
import re
from typing import Any, Final

from synth.monitoring.dashboard import dashboard_json
from synth.monitoring.queries import FILTERED_LABELS

_VARIABLE: Final = re.compile(r"\$(" + "|".join(FILTERED_LABELS) + r")\b")
_LABEL_VALUES: Final = re.compile(r"label_values\((.*), *\w+\)")


def model() -> dict[str, Any]:
    found: dict[str, Any] = json.loads(dashboard_json())
    return found


def panel_queries() -> dict[str, list[str]]:
    """Each panel's expressions, by title, with every variable at All (`.*`)."""
    return {
        panel["title"]: [_VARIABLE.sub(".*", target["expr"]) for target in panel["targets"]]
        for panel in model()["panels"]
        if panel["type"] != "row"
    }


def variable_selectors() -> list[str]:
    """The selectors the dashboard's query variables read label values from."""
    return [
        _VARIABLE.sub(".*", match.group(1))
        for variable in model()["templating"]["list"]
        if variable["type"] == "query" and (match := _LABEL_VALUES.fullmatch(variable["query"]))
    ]
