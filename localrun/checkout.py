"""A scratch checkout holding the fleet, the example models and one workflow, synthesized:
how `make e2e-container` and the tests run a workflow that `specs/` does not commit."""

import shutil
from pathlib import Path
from typing import Final

from contract.dist import Workload, read_workload
from contract.layout import workload_file
from localrun.podman import REPO_ROOT
from synth.main import synth

CLUSTER: Final = "us-east"
EXAMPLES: Final = Path("models") / "examples"


def synthesized_checkout(root: Path, workflow: str, spec: str) -> Workload:
    """A checkout at `root` with specs/clusters.yaml, the example models and `spec` as
    workflow `workflow`, synthesized; returns its workload in CLUSTER."""
    (root / "specs" / "workflows").mkdir(parents=True)
    shutil.copy(REPO_ROOT / "specs" / "clusters.yaml", root / "specs" / "clusters.yaml")
    shutil.copytree(REPO_ROOT / EXAMPLES, root / EXAMPLES)
    (root / "specs" / "workflows" / f"{workflow}.yaml").write_text(spec, encoding="utf-8")
    synth(root)
    return read_workload(root / workload_file(CLUSTER, workflow))
