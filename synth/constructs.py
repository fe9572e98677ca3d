"""Constructs shared by the charts: a Kubernetes object from a plain body, and the
benchmark run (config ConfigMap + Indexed Job) built from a `BenchmarkRun`."""

from collections.abc import Mapping
from typing import Any

from cdk8s import ApiObject, JsonPatch
from constructs import Construct

from synth.job_assembly import BenchmarkRun


def joined_id(*parts: str) -> str:
    """A construct's id from the names it is made of, joined by ':', which no Kubernetes name
    or file name synth writes contains: different names give different ids, where joining
    with '-' let workflow 'namespaces' in cluster 'alpha' take the id of alpha's namespaces
    chart (cdk8s refuses a second construct of one id)."""
    return ":".join(parts)


def api_object(
    scope: Construct, construct_id: str, api_version: str, kind: str, body: Mapping[str, Any]
) -> ApiObject:
    """An ApiObject whose JSON is `body` with its apiVersion and kind.

    The whole object goes in as one JSON patch replacing the document's root: every call into
    cdk8s's Node.js process costs half a millisecond or more, plus some microseconds for each
    value it carries, so an object costs three calls (create, the patch, attach it) and its
    fields cross once. The patch carries the metadata too, so the object is created with its
    name alone.
    """
    metadata = {"name": body["metadata"]["name"]}
    obj = ApiObject(scope, construct_id, api_version=api_version, kind=kind, metadata=metadata)
    obj.add_json_patch(JsonPatch.replace("", {"apiVersion": api_version, "kind": kind, **body}))
    return obj


class BenchmarkJob(Construct):
    """One workflow's Job for one target, with the ConfigMaps holding its config.json."""

    def __init__(self, scope: Construct, construct_id: str, *, run: BenchmarkRun) -> None:
        super().__init__(scope, construct_id)
        bodies = run.config_bodies()
        for number, body in enumerate(bodies):
            # The first keeps the id it had before config.json could be split.
            api_object(self, f"config-{number}" if number else "config", "v1", "ConfigMap", body)
        # Created after its ConfigMaps, so emitted after them: Flux applies in that order.
        api_object(self, "job", "batch/v1", "Job", run.job_body())
