"""One workflow's objects in one cluster: its model ConfigMaps and a Job per target."""

from cdk8s import Chart
from constructs import Construct

from synth.constructs import BenchmarkJob, api_object
from synth.jobs import BenchmarkRun, workflow_labels


class BenchmarksChart(Chart):
    def __init__(self, scope: Construct, construct_id: str, *, runs: list[BenchmarkRun]) -> None:
        super().__init__(scope, construct_id, disable_resource_name_hashes=True)
        models = {m.name: (m, run) for run in runs for m in run.models}
        maps = {}
        for name, (model, run) in sorted(models.items()):
            labels = {**workflow_labels(run.config.workflow), "benchfleet.io/model": model.model}
            maps[name] = api_object(
                self, f"model-{model.model}", "v1", "ConfigMap", model.body(run.namespace, labels)
            )
        for run in runs:
            job = BenchmarkJob(self, run.config.target, run=run)
            for model in run.models:
                job.job.add_dependency(maps[model.name])
