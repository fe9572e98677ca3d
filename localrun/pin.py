"""`make pin-image`: write the pushed image's digest into specs/clusters.yaml, and nothing else.

The file is edited as text, at the exact span PyYAML reports for the `image:` value, so every
comment, blank line and quote elsewhere stays byte-identical; a re-parse then confirms that
only `image` changed. A YAML round-trip (dump) would reflow the file and drop its comments.
"""

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any, Final

import yaml

from contract.layout import FLEET_FILE
from localrun.oci_registry import OciClient, OciError
from localrun.reference import BadReference, ImageReference, parse_pinned

REPO_ROOT: Final = Path(__file__).resolve().parents[1]
PUSH_RECORD: Final = REPO_ROOT / ".cache" / "image" / "pushed.json"
"""Written by `make push`: what `make pin-image` pins when given no IMAGE."""
KEY: Final = "image"


class PinError(RuntimeError):
    """The file cannot be edited safely, or there is nothing valid to pin; says why."""


def _image_value_span(text: str, source: str) -> tuple[int, int]:
    """Character offsets of the top-level `image:` value in `text`."""
    try:
        document = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as error:
        raise PinError(f"{source} is not valid YAML: {error}") from error
    if not isinstance(document, yaml.MappingNode):
        raise PinError(f"{source} is not a mapping at the top")
    values = [
        value
        for key, value in document.value
        if isinstance(key, yaml.ScalarNode) and key.value == KEY
    ]
    if len(values) != 1:
        raise PinError(f"{source} has {len(values)} top-level '{KEY}:' keys, not 1")
    (value,) = values
    if not isinstance(value, yaml.ScalarNode) or value.tag != "tag:yaml.org,2002:str":
        raise PinError(f"{source}:{value.start_mark.line + 1}: '{KEY}:' is not a string")
    if value.start_mark.line != value.end_mark.line or value.style in ("|", ">"):
        # A value folded over lines could hide a comment inside its span.
        raise PinError(
            f"{source}:{value.start_mark.line + 1}: '{KEY}:' spans several lines; "
            "put it on one line, then pin again"
        )
    return value.start_mark.index, value.end_mark.index


def _without_image(data: Any) -> Any:
    return {key: item for key, item in data.items() if key != KEY}


def pin_text(text: str, image: ImageReference, source: str = str(FLEET_FILE)) -> str:
    """`text` with its top-level `image:` value replaced by `image` (name@digest)."""
    if image.digest is None:
        raise PinError(f"{image} has no digest to pin")
    pinned = f"{image.name}@{image.digest}"
    start, end = _image_value_span(text, source)
    # A reference never holds ': ' or ' #' and starts with a letter or digit: plain is safe.
    edited = text[:start] + pinned + text[end:]
    before, after = yaml.safe_load(text), yaml.safe_load(edited)
    if after.get(KEY) != pinned or _without_image(after) != _without_image(before):
        raise PinError(f"editing {source} would change more than '{KEY}:'; edit it by hand")
    return edited


def pin_file(root: Path, image: ImageReference) -> tuple[str, str]:
    """Pin `image` into `root`/specs/clusters.yaml; returns (old value, new value).

    Written through a temporary file and a rename, so a crash leaves the old file whole.
    """
    path = root / FLEET_FILE
    # Bytes, not read_text: newline translation would turn CRLF files into LF ones.
    text = path.read_bytes().decode("utf-8")
    old = yaml.safe_load(text).get(KEY)
    edited = pin_text(text, image, str(FLEET_FILE))
    if edited != text:
        with tempfile.NamedTemporaryFile(
            "wb", dir=path.parent, prefix=f".{path.name}.", delete=False
        ) as handle:
            handle.write(edited.encode("utf-8"))
        os.chmod(handle.name, path.stat().st_mode & 0o777)
        os.replace(handle.name, path)
    return str(old), f"{image.name}@{image.digest}"


def recorded_image(record: Path = PUSH_RECORD) -> ImageReference:
    """The image@digest the last `make push` verified with the registry."""
    try:
        pushed = json.loads(record.read_text(encoding="utf-8"))
        return parse_pinned(f"{pushed['image']}@{pushed['digest']}")
    except FileNotFoundError:
        raise PinError(
            f"no push recorded in {record}: run `make push REGISTRY=host:port/path` first, "
            "or give the image: make pin-image IMAGE=registry/name@sha256:<digest>"
        ) from None
    except (ValueError, KeyError, TypeError) as error:
        if isinstance(error, BadReference):
            raise
        raise PinError(f"{record} is not a push record ({error!r}): push again") from error


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m localrun.pin", description=__doc__)
    parser.add_argument(
        "--image", default="", help="registry/name@sha256:... (default: the last make push)"
    )
    parser.add_argument("--root", type=Path, default=REPO_ROOT, help="the checkout to edit")
    parser.add_argument("--record", type=Path, default=PUSH_RECORD, help=argparse.SUPPRESS)
    parser.add_argument(
        "--no-registry-check",
        action="store_true",
        help="pin without asking the registry that it holds the digest",
    )
    parser.add_argument("--insecure", action="store_true", help="plain HTTP to the registry")
    arguments = parser.parse_args(argv)
    try:
        if arguments.image:
            image = parse_pinned(arguments.image)
        else:
            image = recorded_image(arguments.record)
        if not arguments.no_registry_check:
            # A digest the registry lacks would pass review and fail as ImagePullBackOff.
            client = OciClient(image.registry, arguments.insecure or image.is_loopback)
            client.manifest(image)
        old, new = pin_file(arguments.root, image)
    except (BadReference, PinError, OciError, OSError) as error:
        if isinstance(error, OciError):
            print(f"pin-image: the registry does not confirm {image}: {error}", file=sys.stderr)
            print(
                "pin-image: (make pin-image NO_REGISTRY_CHECK=1, or --no-registry-check, "
                "pins without asking)",
                file=sys.stderr,
            )
        else:
            print(f"pin-image: {error}", file=sys.stderr)
        return 1
    where = arguments.root / FLEET_FILE
    print(f"pin-image: {where}: image: {new}" + (" (unchanged)" if old == new else ""))
    if old != new:
        print(f"pin-image: was {old}; now run `make synth` to write it into every Job")
    return 0


if __name__ == "__main__":
    sys.exit(main())
