"""One workflow's objects in one cluster: its model bundles and the CA bundles its downloads
trust (ConfigMaps), and a Job per target and repeat."""

from typing import Any

from cdk8s import Chart
from constructs import Construct

from contract.layout import REPEAT_LABEL
from synth.constructs import BenchmarkJob, api_object, joined_id
from synth.job_assembly import BenchmarkRun, workflow_labels


class BenchmarksChart(Chart):
    def __init__(self, scope: Construct, construct_id: str, *, runs: list[BenchmarkRun]) -> None:
        super().__init__(scope, construct_id, disable_resource_name_hashes=True)
        bundles = {b.name: (b, run) for run in runs for b in run.models}
        self._payloads = {name: bundle for name, (bundle, _) in bundles.items()}
        maps = {}
        for name, (bundle, run) in sorted(bundles.items()):
            labels = workflow_labels(run.config.workflow)
            maps[name] = api_object(
                self,
                joined_id("models", name),
                "v1",
                "ConfigMap",
                bundle.body(run.namespace, labels),
            )
        trusted = {ca.name: (ca, run) for run in runs for ca in run.ca_bundles}
        for name, (ca, run) in sorted(trusted.items()):
            labels = workflow_labels(run.config.workflow)
            api_object(
                self, joined_id("ca", name), "v1", "ConfigMap", ca.body(run.namespace, labels)
            )
        # The ConfigMaps come first in the file, as they are created first.
        for run in runs:
            repeat = run.labels.get(REPEAT_LABEL)
            parts = ("target", run.config.target, *(("repeat", repeat) if repeat else ()))
            BenchmarkJob(self, joined_id(*parts), run=run)

    def manifests(self) -> list[dict[str, Any]]:
        """The synthesized objects, with each model ConfigMap's payload attached.

        The model bytes join the objects only after cdk8s has synthesized them: passed
        through cdk8s, every byte would cross to its Node.js process and back as JSON, which
        made synthesis of 1000 small models 1.7x slower (and grows with model size), while
        cdk8s has nothing to resolve or patch inside them.
        """
        objects: list[dict[str, Any]] = list(self.to_json())
        for obj in objects:
            model = self._payloads.get(obj["metadata"]["name"])
            if obj["kind"] == "ConfigMap" and model is not None:
                obj["binaryData"] = model.binary_data()
        return objects
