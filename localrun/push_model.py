"""`make push-model MODEL=path/to/model.pt2 REGISTRY=host[:port]/path`: pack a `.pt2` as an OCI
artifact an image volume mounts (localrun/artifact.py), push it, check that the registry
serves it, and print the `models:` entry to paste into a workflow, with the program's
`layers:` (which synth, never reaching the registry, judges its quantizations by).

The model is checked first as synth and the runner check it (contract/archive.py): an
archive they would refuse is not pushed. The repository is REGISTRY/<name> (the file's
stem by default); the tag names the `.pt2`'s digest (`pt2-<12 hex>`), so pushing the same
file again is a no-op with the same digest, and a registry that collects untagged
manifests keeps it.
"""

import argparse
import re
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from contract.archive import Program, UnsafeArchive, check_archive
from contract.config import OCI_DEFAULT_FILE
from contract.weights import LayerRecord
from localrun.artifact import Artifact, pack
from localrun.oci_registry import OciClient, OciError
from localrun.reference import BadReference, ImageReference, in_registry, parse_registry

TAG_PREFIX = "pt2-"


class PushModelError(RuntimeError):
    """The model cannot be pushed as it is; says why."""


@dataclass(frozen=True)
class PushedModel:
    reference: ImageReference
    """`registry/repository:tag` as pushed."""
    digest: str
    """The index's digest, which the registry serves for the tag."""
    artifact: Artifact
    uploaded: int
    """Blobs sent; 0 when the registry had every one."""

    @property
    def pinned(self) -> str:
        return f"{self.reference.name}@{self.digest}"

    def spec_lines(self, name: str) -> str:
        """The workflow's `models:` entry for it."""
        lines = [f"  - name: {name}", f"    oci: {self.pinned}"]
        if self.artifact.inside != OCI_DEFAULT_FILE:
            lines.append(f"    oci_file: {self.artifact.inside}")
        lines.append(f"    sha256: {self.artifact.model_sha256}")
        if self.artifact.layers is not None:
            lines.append(f"    layers: {self.artifact.layers.flow()}")
        return "\n".join(lines) + "\n"


def repository_name(model: Path) -> str:
    """A repository path component from the file's stem: `ResNet_50.v2` -> `resnet_50.v2`."""
    name = re.sub(r"[^a-z0-9._-]+", "-", model.stem.lower()).strip("._-")
    return re.sub(r"[._-]{2,}", "-", name) or "model"


def model_name(model: Path) -> str:
    """A workflow model name (a DNS label of at most 30) from the file's stem."""
    name = re.sub(r"[^a-z0-9]+", "-", model.stem.lower()).strip("-")[:30].rstrip("-")
    return name if name[:1].isalpha() else f"m-{name}"[:30].rstrip("-")


def check_model(model: Path) -> Program:
    """What the archive at `model` declares; PushModelError where synth and the runner would
    refuse it."""
    if not model.is_file():
        raise PushModelError(f"{model} is not a file")
    if model.suffix != ".pt2":
        raise PushModelError(f"{model} is not a .pt2 file: export it with torch.export.save()")
    try:
        return check_archive(model)
    except UnsafeArchive as error:
        raise PushModelError(f"{model} would be refused by synth and the runner: {error}") from None


def push_model(
    model: Path,
    registry: str,
    scratch: Path,
    *,
    name: str | None = None,
    inside: str = OCI_DEFAULT_FILE,
    insecure: bool = False,
    credentials: str | None = None,
) -> PushedModel:
    """Pack `model`, push it to `registry` (`host[:port]/path`), and confirm the digest."""
    linear = check_model(model).linear
    artifact = pack(model, scratch, inside, LayerRecord.of(linear) if linear is not None else None)
    tag = TAG_PREFIX + artifact.model_sha256[:12]
    target = in_registry(parse_registry(registry), name or repository_name(model), tag)
    insecure = insecure or target.is_loopback
    client = OciClient(target.registry, insecure, credentials)
    repository = target.repository
    uploaded = sum(client.push_blob(repository, blob, scratch) for blob in artifact.blobs())
    for manifest in artifact.manifests:
        client.push_manifest(repository, manifest.digest, manifest)
    client.push_manifest(repository, tag, artifact.index)
    # Asked again: what a node pulling the tag or digest gets.
    served = client.manifest(target).digest
    if served != artifact.index.digest:
        raise PushModelError(
            f"pushed {target} as {artifact.index.digest}, but the registry serves {served}"
        )
    client.manifest(target.with_digest(served))
    return PushedModel(target, served, artifact, uploaded)


def _say(message: str) -> None:
    print(f"push-model: {message}", flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m localrun.push_model", description=__doc__)
    parser.add_argument("--model", type=Path, required=True, help="the .pt2 file")
    parser.add_argument("--registry", default="", help="host[:port]/path")
    parser.add_argument("--name", default=None, help="the repository under it (default: stem)")
    parser.add_argument(
        "--file", default=OCI_DEFAULT_FILE, help="its path inside the artifact (oci_file)"
    )
    parser.add_argument(
        "--insecure", action="store_true", help="plain HTTP (automatic for a loopback registry)"
    )
    arguments = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="benchfleet-push-model-") as scratch:
        try:
            pushed = push_model(
                arguments.model,
                arguments.registry,
                Path(scratch),
                name=arguments.name,
                inside=arguments.file,
                insecure=arguments.insecure,
            )
        except (PushModelError, BadReference, OciError, OSError) as error:
            print(f"push-model: FAILED: {error}", file=sys.stderr)
            return 1
    layer = pushed.artifact.layer
    sent = f"{pushed.uploaded} blob(s) uploaded" if pushed.uploaded else "every blob was there"
    _say(f"pushed {pushed.reference} ({layer.size:,} bytes in one layer; {sent})")
    _say(f"the registry serves it as {pushed.digest}")
    _say("add to the workflow's models (name it as you like):")
    print(pushed.spec_lines(model_name(arguments.model)), end="", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
