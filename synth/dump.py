"""YAML as synth writes it: byte-stable, multi-line strings (config.json, PromQL) as literal
blocks a reviewer can read."""

from typing import Any

import yaml

from contract.layout import GENERATED_HEADER


class _Dumper(yaml.CSafeDumper):
    """Writes multi-line strings (config.json) as literal blocks a reviewer can read."""


def _represent_str(dumper: "_Dumper", text: str) -> yaml.Node:
    style = "|" if "\n" in text else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", text, style=style)


_Dumper.add_representer(str, _represent_str)


def dump_documents(documents: list[Any]) -> str:
    """Objects as one multi-document YAML file, byte-stable across runs and machines."""
    body = yaml.dump_all(documents, Dumper=_Dumper, sort_keys=False, explicit_start=True, width=100)
    return GENERATED_HEADER + body
