"""Constructs shared by the charts: a Kubernetes object from a plain body, and the
benchmark run (config ConfigMap + Indexed Job) built from a `BenchmarkRun`."""

from collections.abc import Mapping
from typing import Any

from cdk8s import ApiObject, JsonPatch
from constructs import Construct

from synth.jobs import BenchmarkRun


def api_object(
    scope: Construct, construct_id: str, api_version: str, kind: str, body: Mapping[str, Any]
) -> ApiObject:
    """An ApiObject with `body`'s metadata and every other top-level field.

    The fields go in as one JSON patch: one call into cdk8s's Node process per object, which
    is what keeps synth's time proportional to the objects rather than to their fields.
    """
    obj = ApiObject(
        scope, construct_id, api_version=api_version, kind=kind, metadata=body["metadata"]
    )
    patches = [JsonPatch.add(f"/{key}", value) for key, value in body.items() if key != "metadata"]
    if patches:
        obj.add_json_patch(*patches)
    return obj


class BenchmarkJob(Construct):
    """One workflow's Job for one target, with the ConfigMap holding its config.json."""

    def __init__(self, scope: Construct, construct_id: str, *, run: BenchmarkRun) -> None:
        super().__init__(scope, construct_id)
        self.config = api_object(self, "config", "v1", "ConfigMap", run.config_body())
        self.job = api_object(self, "job", "batch/v1", "Job", run.job_body())
        self.job.add_dependency(self.config)
