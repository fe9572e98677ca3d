"""The base every spec model derives from: unknown keys are errors, values are immutable."""

from pydantic import BaseModel, ConfigDict


class SpecModel(BaseModel):
    """A part of a spec file. Attribute docstrings become the JSON Schema descriptions."""

    model_config = ConfigDict(
        extra="forbid",
        frozen=True,
        use_attribute_docstrings=True,
        validate_default=True,
    )
