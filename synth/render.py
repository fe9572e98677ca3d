"""Specs -> the text of every file under dist/ and clusters/, in memory.

Nothing is written here: `synth.write` swaps the whole tree in only once rendering has
succeeded for every workflow and cluster.
"""

from collections.abc import Mapping
from pathlib import PurePosixPath
from typing import TYPE_CHECKING

import yaml

from contract.layout import DIST, FLEET_FILE, GENERATED_HEADER, WORKLOADS, workload_file
from synth.cache import RenderCache, infrastructure_key, workflow_key
from synth.checks import target_clusters
from synth.committed import CommittedJob, JobSlot, listed
from synth.dump import dump_documents
from synth.fleet import Cluster, Fleet
from synth.identity import identify
from synth.jobs import plan_runs
from synth.load import LoadedWorkflow, Specs
from synth.monitoring.rules import Schedule
from synth.names import namespace_of
from synth.object_checks import Origin, refused
from synth.problems import SpecProblems
from synth.recorded import Recorded
from synth.reuse import may_stay

if TYPE_CHECKING:
    from synth.build import Build


def kustomization(resources: list[str]) -> str:
    """A kustomize.config.k8s.io file listing `resources`, so `kubectl kustomize` renders it."""
    body = {
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "resources": resources,
    }
    return GENERATED_HEADER + yaml.dump(body, Dumper=yaml.CSafeDumper, sort_keys=False)


class _Rendering:
    """One render: files reused from the cache, and the cdk8s build for the others, started
    at the first file the cache does not hold."""

    def __init__(self, cache: RenderCache | None, specs: Specs) -> None:
        self.cache = cache
        self.model_files = specs.model_files
        self.fleet_source = specs.fleet_source
        self.reused: dict[PurePosixPath, str] = {}
        self._build: Build | None = None
        self._to_cache: dict[str, list[PurePosixPath]] = {}
        self._origins: dict[PurePosixPath, Origin] = {}
        """The spec file each built file comes from, where its objects' problems are told."""

    @property
    def build(self) -> "Build":
        if self._build is None:
            # Imported here, not at the top: importing cdk8s starts Node.js, which a synth
            # whose every file is cached never needs.
            from synth.build import Build  # noqa: PLC0415

            self._build = Build()
        return self._build

    def workflow(
        self,
        loaded: LoadedWorkflow,
        fleet: Fleet,
        cluster: Cluster,
        stored: Recorded,
        committed: Mapping[JobSlot, CommittedJob],
    ) -> bool:
        """Adds the workflow's file in `cluster`; False if it has nothing left to run."""
        path = workload_file(cluster.name, loaded.workflow.id)
        identified = identify(loaded, fleet, cluster, self.model_files)
        staying = may_stay(identified, stored, committed=committed)
        key = None
        if self.cache is not None:
            key = workflow_key(
                loaded,
                fleet,
                cluster,
                self.model_files,
                stored.key,
                committed=listed(staying),
            )
            cached = self.cache.get(key)
            if cached is not None:
                self.reused.update(cached)
                return True
        # A Job whose results are stored is done: leaving dist/ makes Flux prune it, where
        # keeping it would run it again if anything deleted it. Its variants are left out of
        # the Jobs that follow it, so only what has no recorded outcome runs.
        runs = plan_runs(identified, self.model_files, stored, staying=staying)
        if not runs:
            return False
        self.build.add_workflow(path, runs)
        self._origins[path] = Origin(
            loaded.source, loaded.file, cluster.name, ("id",), loaded.workflow
        )
        if key is not None:
            self._to_cache[key] = [path]
        return True

    def infrastructure(
        self,
        fleet: Fleet,
        cluster: Cluster,
        downloading: dict[str, list[str]],
        queues: set[tuple[str, str]],
        schedules: list[Schedule],
    ) -> None:
        """Adds the cluster's infrastructure and Flux files (cached together, as one entry)."""
        key = None
        if self.cache is not None:
            key = infrastructure_key(fleet, cluster, downloading, queues, schedules)
            cached = self.cache.get(key)
            if cached is not None:
                self.reused.update(cached)
                return
        paths = self.build.add_infrastructure(cluster, fleet, downloading, queues, schedules)
        loc = ("clusters", fleet.clusters.index(cluster))
        origin = Origin(self.fleet_source, FLEET_FILE.as_posix(), cluster.name, loc)
        self._origins.update(dict.fromkeys(paths, origin))
        if key is not None:
            self._to_cache[key] = paths

    def files(self) -> dict[PurePosixPath, str]:
        """Every file, the built ones stored in the cache for next time. Raises SpecProblems
        where the API server would refuse a built object (`synth.object_checks`): nothing is
        cached or written then."""
        objects = self._build.synthesize() if self._build is not None else {}
        if problems := refused(objects, self._origins):
            raise SpecProblems(problems)
        files = {path: dump_documents(documents) for path, documents in objects.items()}
        if self.cache is not None:
            for key, paths in self._to_cache.items():
                self.cache.put(key, {path: files[path] for path in paths})
        return {**files, **self.reused}


def render(specs: Specs, cache: RenderCache | None = None) -> dict[PurePosixPath, str]:
    """Every generated file, by path relative to the repository root.

    With a cache, files rendered before from the same inputs are reused. Raises
    SpecProblems where the API server would refuse an object (its size, its labels), which
    only its whole content shows.
    """
    rendering = _Rendering(cache, specs)
    fleet = specs.fleet
    for cluster in fleet.clusters:
        downloading: dict[str, list[str]] = {}
        queues: set[tuple[str, str]] = set()
        schedules: list[Schedule] = []
        for loaded in specs.workflows:
            workflow = loaded.workflow
            if cluster not in target_clusters(workflow, fleet):
                continue
            if (every := workflow.scheduling.every) is not None:
                # Its alerts stand while a run is recorded and nothing of it is rendered.
                deadline = workflow.scheduling.deadline
                schedules.append(Schedule(workflow.id, (cluster.name,), int(every), int(deadline)))
            stored = specs.recorded[workflow.id, cluster.name]
            committed = specs.committed.jobs.get((workflow.id, cluster.name), {})
            if not rendering.workflow(loaded, fleet, cluster, stored, committed):
                continue
            namespace = namespace_of(workflow.environment)
            if any(file.url is not None for file in workflow.delivered.values()):
                downloading.setdefault(namespace, []).append(workflow.id)
            if workflow.scheduling.queue is not None:
                queues.add((namespace, workflow.scheduling.queue))
        rendering.infrastructure(fleet, cluster, downloading, queues, schedules)
    files = rendering.files()
    return {**files, **_kustomizations(files)}


def _kustomizations(files: Mapping[PurePosixPath, str]) -> dict[PurePosixPath, str]:
    folders: dict[PurePosixPath, list[str]] = {}
    # Only dist/: in clusters/<cluster>/ a kustomization.yaml listing synth's file would hide
    # flux bootstrap's flux-system/ from Flux, which generates one covering the whole folder.
    for path in files:
        if path.parts[0] == DIST:
            folders.setdefault(path.parent, []).append(path.name)
    for cluster_dist in {p.parent for p in folders}:
        # A cluster no workflow targets still gets an (empty) workloads folder, so that its
        # Flux Kustomization has a path to apply and prune.
        folders.setdefault(cluster_dist / WORKLOADS, [])
    return {
        folder / "kustomization.yaml": kustomization(sorted(names))
        for folder, names in sorted(folders.items())
    }
