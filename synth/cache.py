"""A local cache of rendered files, so a re-synth renders only what changed.

Rendering goes through cdk8s's Node.js process, a millisecond or more per object, and
starting it costs half a second. A workflow's file is a pure function of its spec, the fleet
config, its model files, the code that renders it and which of its Jobs have results
recorded; a cluster's infrastructure and Flux files, of the fleet and what its workflows ask
of them. So files rendered before from the same inputs are reused. Each key covers all of
them, the code included (every source file of synth, the modules synth imports from
runner/, and the cdk8s version): any change to any input renders anew. The cache lives in
`.cache/synth/` (git-ignored); deleting it only costs time.
"""

import dataclasses
import hashlib
import json
from collections.abc import Mapping, Sequence
from functools import cache
from importlib.metadata import version
from pathlib import Path, PurePosixPath
from typing import Final

from contract.layout import SYNTH_CACHE
from synth.digests import digest
from synth.fleet import Cluster, Fleet
from synth.load import LoadedWorkflow
from synth.modelfiles import ModelFiles
from synth.monitoring.rules import Schedule

CACHE_DIR: Final = Path(SYNTH_CACHE)
_SOURCES: Final = Path(__file__).resolve().parent.parent
_CONTRACTS: Final = ("contract", "runner/errors.py")
"""What synth renders from besides itself: the whole contract (config.json's shape, label
and annotation keys, the accuracy gates' defaults and their annotation, the records) and
the exit codes Jobs act on. Only config.py was hashed once, and an edit of another contract
module (a default gate) left every cached render stale."""


def rendering_sources() -> list[Path]:
    """Every source file whose code decides what synth renders, sorted."""
    sources = [_SOURCES / "synth", *(_SOURCES / name for name in _CONTRACTS)]
    return sorted(
        found
        for source in sources
        for found in (source.rglob("*.py") if source.is_dir() else [source])
    )


@cache
def code_digest() -> str:
    """sha256 over the code that renders manifests."""
    sha = hashlib.sha256(version("cdk8s").encode())
    for path in rendering_sources():
        sha.update(path.relative_to(_SOURCES).as_posix().encode())
        sha.update(path.read_bytes())
    return sha.hexdigest()


def workflow_key(
    loaded: LoadedWorkflow,
    fleet: Fleet,
    cluster: Cluster,
    files: ModelFiles,
    stored: Mapping[str, object],
    *,
    committed: Sequence[object],
) -> str:
    """Everything one workflow's file in one cluster depends on (its spec, and for a
    scheduled workflow the run it is at), hashed; `stored` is what
    results/ holds of it (synth.recorded.Recorded.key): recorded Jobs and variants are left
    out; `committed` the Jobs git's HEAD holds of it that may stay (synth.committed.listed)."""
    named = [program for m in loaded.workflow.models for program in m.programs().items()]
    models = {name: files.read(p.file).sha256 for name, p in named if p.file}
    trusted = {file for _, p in named if (file := p.trusted_bundle(fleet))}
    store = fleet.results_store_of(cluster)
    if store is not None and store.ca_bundle is not None:
        trusted.add(store.ca_bundle)
    return digest(
        {
            "code": code_digest(),
            "fleet": fleet.model_dump(mode="json"),
            "cluster": cluster.name,
            "file": loaded.file,
            "spec": loaded.sha256,
            "workflow": loaded.workflow.model_dump(mode="json"),
            "schedule": loaded.schedule.model_dump(mode="json") if loaded.schedule else None,
            "models": models,
            "ca_bundles": {file: files.ca_bundle(file).sha256 for file in sorted(trusted)},
            "stored": stored,
            "committed": committed,
        }
    )


def infrastructure_key(
    fleet: Fleet,
    cluster: Cluster,
    downloading: dict[str, list[str]],
    queues: set[tuple[str, str]],
    schedules: Sequence[Schedule],
) -> str:
    """Everything a cluster's infrastructure and Flux files depend on, hashed: the fleet, and
    what its workflows ask of them (model downloads, Kueue queues, missing-data alerts)."""
    return digest(
        {
            "code": code_digest(),
            "fleet": fleet.model_dump(mode="json"),
            "cluster": cluster.name,
            "downloading": downloading,
            "queues": sorted(queues),
            "schedules": [dataclasses.asdict(schedule) for schedule in schedules],
        }
    )


class RenderCache:
    """Rendered files by key, in a folder: each entry is one key's files, as JSON."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def get(self, key: str) -> dict[PurePosixPath, str] | None:
        path = self.folder / f"{key}.json"
        if not path.is_file():
            return None
        files = json.loads(path.read_text(encoding="utf-8"))
        return {PurePosixPath(name): text for name, text in files.items()}

    def put(self, key: str, files: Mapping[PurePosixPath, str]) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        staging = self.folder / f".{key}.tmp"
        entry = {str(path): text for path, text in files.items()}
        staging.write_text(json.dumps(entry, sort_keys=True), encoding="utf-8")
        staging.replace(self.folder / f"{key}.json")
