"""A model's family and parameters (`models[].family`, `models[].params`): several exported
programs of one policy or network, each at other values of the knobs a team trades against
rate (`{action_chunk: 8, denoise_steps: 10}`), compared along each knob by the report, only
within one family. They are facts of the program, like its sha256, not settings of a
variant's measurement: nothing sweeps them, they travel in config.json's model entry and the
result, and the report reads them from the result (docs/architecture.md, "Where a spec field
travels")."""

from typing import Annotated, Final

from pydantic import Field, StrictFloat, StrictInt, StrictStr

MAX_PARAMS: Final = 8
ParamName = Annotated[str, Field(pattern=r"^[a-z][a-z0-9_]{0,39}$")]
ParamValue = StrictInt | StrictFloat | Annotated[StrictStr, Field(min_length=1, max_length=40)]
Params = Annotated[dict[ParamName, ParamValue], Field(min_length=1, max_length=MAX_PARAMS)]
"""A model's parameters by name: whole numbers, numbers or short words."""


def param_order(value: ParamValue) -> tuple[int, float, str]:
    """Where `value` sorts among a parameter's values: numbers by size before words."""
    if isinstance(value, str):
        return (1, 0.0, value)
    return (0, float(value), "")


def params_text(params: dict[str, ParamValue]) -> str:
    """`params` in a few words, by name: "action_chunk=8 denoise_steps=10"."""
    return " ".join(f"{name}={value}" for name, value in sorted(params.items()))
