"""A kubelet's pod work for the local cluster's kwok nodes. Test infrastructure, not product.

kwok keeps the nodes alive but runs nothing. This executor watches the pods the real
scheduler binds to them and does, through the real API, what a kubelet does with a pod:
- a pod without GPUs runs for real, through `localrun` as `make demo` runs one: the real
  runner, config.json and the models from the pod's ConfigMaps as the API server holds them,
  the env and JOB_COMPLETION_INDEX from the pod;
- a pod with GPUs cannot run here: its outcome comes from a rule the test hands over
  (succeed with a given result, exit with a code, never start); without a rule it runs the
  real runner too, which reports device_missing as on a mislabelled node;
- status goes through the `pods/status` subresource as a kubelet writes it: Running, then
  terminated with exit code, reason and the termination log (or, with
  FallbackToLogsOnError, the log's tail) as `message`;
- an image volume is pulled by digest from its registry, unpacked once per node and mounted
  read-only (localrun/images.py, the implementation `localrun` uses); a pull that fails
  leaves the pod waiting with ErrImagePull and the cause, as a kubelet does;
- an env var from a Secret's key (`secretKeyRef`) is read from the API server with the
  executor's own credentials as the container starts: an optional one whose Secret or key
  is missing is left unset; a required one leaves the container waiting with
  CreateContainerConfigError in a kubelet's words, tried again every `CONFIG_RETRY_S`;
- the output is written as a CRI log file and registered with kwok (a `Logs` object owned by
  the pod), so `pods/log` returns it through the API server and kwok's kubelet endpoint;
- a deleted pod (evicted, preempted, past its Job's deadline) gets SIGTERM, then SIGKILL
  after its grace period, its final status, and then the kubelet's delete with grace 0.
"""

import base64
import contextlib
import datetime
import itertools
import json
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, cast

from kubernetes import client, config, watch
from kubernetes.client import ApiException

from contract.layout import COMPLETION_INDEX_KEY, JOB_NAME_LABEL
from contract.result import BenchResult, result_line
from contract.result import termination_message as runner_termination_log
from localcluster.controlplane import Cluster
from localcluster.processes import start
from localrun.images import ImagePullError, ImageStore
from localrun.pod import (
    ContainerConfigError,
    ContainerEnv,
    container_env,
    image_mounts,
    plan_pod,
)
from localrun.process import start_process
from localrun.streams import ProcessGroup

Pod = dict[str, Any]
TERMINATION_MESSAGE_LIMIT: Final = 4096
# A kubelet's FallbackToLogsOnError takes the last 80 lines, at most 2048 bytes.
FALLBACK_LINES: Final = 80
FALLBACK_BYTES: Final = 2048
DEFAULT_GRACE_S: Final = 30
RUN_TIMEOUT_S: Final = 1800.0
CONFIG_RETRY_S: Final = 10.0
"""How soon a kubelet's pod worker tries a container it could not configure again."""


@dataclass(frozen=True)
class Succeed:
    """Run for `seconds`, print `result`'s line (a group's: one per variant), write the
    termination log the runner writes, exit 0."""

    result: BenchResult | tuple[BenchResult, ...]
    seconds: float = 0.2


@dataclass(frozen=True)
class Exit:
    """Run for `seconds` and end with `code` (and `reason`, as the kubelet would name it)."""

    code: int
    message: str = ""
    output: str = ""
    reason: str = "Error"
    seconds: float = 0.2


@dataclass(frozen=True)
class NeverStart:
    """Stay Pending with the container waiting (an image that never pulls, say)."""

    reason: str = "ContainerCreating"


Outcome = Succeed | Exit | NeverStart
Rule = Callable[[Pod], Outcome | None]
"""What a pod should do; None runs the real runner."""


def job_index(pod: Pod) -> tuple[str, int]:
    """The Job a pod belongs to and its completion index."""
    metadata = pod["metadata"]
    job = metadata.get("labels", {}).get(JOB_NAME_LABEL, "")
    return job, int(metadata.get("annotations", {}).get(COMPLETION_INDEX_KEY, 0))


def downward_fields(pod: Pod) -> dict[str, str]:
    """The values the downward API resolves fieldPaths to for this pod."""
    metadata, spec = pod["metadata"], pod["spec"]
    fields = {
        "metadata.name": metadata["name"],
        "metadata.namespace": metadata["namespace"],
        "metadata.uid": metadata["uid"],
        "spec.nodeName": spec.get("nodeName", ""),
        "spec.serviceAccountName": spec.get("serviceAccountName", ""),
    }
    for kind in ("labels", "annotations"):
        for key, value in metadata.get(kind, {}).items():
            fields[f"metadata.{kind}['{key}']"] = value
    return fields


def _raw(response: Any) -> Pod:
    """The JSON body of a call made with `_preload_content=False`."""
    return cast(Pod, json.loads(response.data))


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _cri_log(stdout: str, stderr: str) -> str:
    """Lines in the CRI log format kwok's log endpoint reads, stdout before stderr."""
    stamp = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    lines = [f"{stamp} stdout F {line}" for line in stdout.splitlines()]
    lines += [f"{stamp} stderr F {line}" for line in stderr.splitlines()]
    return "".join(line + "\n" for line in lines)


def termination_message(container: dict[str, Any], log: str, output: str, failed: bool) -> str:
    """What a kubelet puts into `terminated.message`."""
    message = log.encode()[:TERMINATION_MESSAGE_LIMIT].decode(errors="ignore")
    if message or not failed:
        return message
    if container.get("terminationMessagePolicy") != "FallbackToLogsOnError":
        return ""
    tail = "\n".join(output.splitlines()[-FALLBACK_LINES:])
    return tail.encode()[-FALLBACK_BYTES:].decode(errors="ignore")


class _PodTask:
    """One pod's life on its node: start, run, end, and termination when asked."""

    def __init__(self, executor: "PodExecutor", pod: Pod) -> None:
        self.executor = executor
        self.namespace: str = pod["metadata"]["namespace"]
        self.name: str = pod["metadata"]["name"]
        self.uid: str = pod["metadata"]["uid"]
        self.pod = pod
        self.process: subprocess.Popen[str] | None = None
        self.terminating = threading.Event()
        self.finished = threading.Event()
        self.lock = threading.Lock()
        self.thread = threading.Thread(target=self._live, name=f"pod-{self.name}", daemon=True)

    def _live(self) -> None:
        try:
            outcome = self.executor.rule(self.pod) if self.executor.rule else None
            if isinstance(outcome, NeverStart):
                self.executor.write_waiting(self, outcome.reason)
                self.terminating.wait()
                return
            try:
                # As a kubelet does before it starts the container: the pod waits meanwhile.
                job, _ = job_index(self.pod)
                images = self.executor.images.mount_all(image_mounts(job, self.pod["spec"]))
            except ImagePullError as error:
                self.executor.write_waiting(self, error.reason, error.message)
                self.terminating.wait()
                return
            env = self._configure()
            if env is not None:
                self._run(outcome, images, env)
        except Exception as error:
            # What containerd reports for a container it could not start.
            self.executor.record_problem(f"{self.namespace}/{self.name}: {error!r}")
            self.executor.write_terminated(
                self, _now(), code=128, reason="StartError", log=str(error), output=""
            )
        finally:
            self.finished.set()
            if self.terminating.is_set():
                self.executor.confirm_deletion(self)

    def _configure(self) -> ContainerEnv | None:
        """The container's env, once its Secrets can be read; None if the pod is deleted
        while it waits for them."""
        job, index = job_index(self.pod)
        container = self.executor.container(self.pod)
        fields = downward_fields(self.pod)
        while True:
            try:
                secrets = self.executor.secrets(self.namespace)
                return container_env(
                    container, fields, index, job, secrets, namespace=self.namespace
                )
            except ContainerConfigError as error:
                self.executor.write_waiting(self, "CreateContainerConfigError", str(error))
            if self.terminating.wait(CONFIG_RETRY_S):
                return None

    def _run(
        self, outcome: Succeed | Exit | None, images: dict[str, Path], env: ContainerEnv
    ) -> None:
        if self.terminating.is_set():
            return
        started = _now()
        self.executor.write_running(self, started)
        if outcome is None:
            code, stdout, stderr, log = self._run_runner(images, env)
            reason = "Completed" if code == 0 else "Error"
        else:
            code, stdout, stderr, log, reason = self._simulate(outcome)
        self.executor.write_log(self, _cri_log(stdout, stderr))
        self.executor.write_terminated(
            self, started, code=code, reason=reason, log=log, output=stdout + stderr
        )

    def _simulate(self, outcome: Succeed | Exit) -> tuple[int, str, str, str, str]:
        ended_early = self.terminating.wait(outcome.seconds)
        if ended_early:
            return 143, "", "terminated\n", "", "Error"
        if isinstance(outcome, Succeed):
            results = outcome.result if isinstance(outcome.result, tuple) else (outcome.result,)
            lines = "".join(result_line(result) for result in results)
            return 0, lines, "", runner_termination_log(list(results)), "Completed"
        return outcome.code, outcome.output, "", outcome.message, outcome.reason

    def _run_runner(self, images: dict[str, Path], env: ContainerEnv) -> tuple[int, str, str, str]:
        job, index = job_index(self.pod)
        spec = self.pod["spec"]
        configmaps = self.executor.configmaps(self.namespace, spec)
        workdir = self.executor.workdir / self.namespace / self.name
        plan = plan_pod(job, index, spec, configmaps, workdir, env=env)
        with self.lock:
            if self.terminating.is_set():
                return 143, "", "", ""
            self.process, termination_log = start_process(plan, images)
        group = ProcessGroup(self.process.pid)
        try:
            stdout, stderr = self.process.communicate(timeout=RUN_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            group.kill()
            stdout, stderr = self.process.communicate()
        # A kubelet ends the container with its first process: whatever the runner left
        # (inductor's compile workers) goes with it.
        group.kill()
        log = termination_log.read_text(encoding="utf-8")
        return self.process.returncode, stdout, stderr, log

    def terminate(self, grace_s: float) -> None:
        """SIGTERM the runner; SIGKILL it if it outlives the pod's grace period."""
        with self.lock:
            self.terminating.set()
            process = self.process
        if process is None or process.poll() is not None:
            return
        process.send_signal(signal.SIGTERM)

        def kill_late() -> None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=grace_s)
                return
            ProcessGroup(process.pid).kill()

        threading.Thread(target=kill_late, daemon=True).start()


class PodExecutor:
    """Watches pods bound to the cluster's nodes and runs them as a kubelet would."""

    def __init__(self, api: client.ApiClient, workdir: Path, rule: Rule | None = None) -> None:
        self.core = client.CoreV1Api(api)
        self.custom = client.CustomObjectsApi(api)
        self.workdir = workdir
        self.images = ImageStore(workdir / "images")
        """The node's image volumes, pulled from the registries their references name."""
        self.rule = rule
        self.problems: list[str] = []
        self._tasks: dict[str, _PodTask] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="pod-executor", daemon=True)
        self._ips = (f"10.244.{n // 250}.{n % 250 + 2}" for n in itertools.count())
        self._tasks_lock = threading.Lock()

    def start(self) -> "PodExecutor":
        self.workdir.mkdir(parents=True, exist_ok=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop watching and end every pod process (the node goes away)."""
        self._stop.set()
        with self._tasks_lock:
            tasks = list(self._tasks.values())
        for task in tasks:
            if task.process is not None and task.process.poll() is None:
                ProcessGroup(task.process.pid).kill()
        self._thread.join(timeout=10)

    def record_problem(self, problem: str) -> None:
        self.problems.append(problem)

    # The watch: list, then watch from the list's resourceVersion; list again on 410.
    def _watch(self) -> None:
        while not self._stop.is_set():
            try:
                listed = self.core.list_pod_for_all_namespaces(
                    field_selector="spec.nodeName!=", _preload_content=False
                )
                body = _raw(listed)
                for pod in body["items"]:
                    self._handle(pod)
                version = body["metadata"]["resourceVersion"]
                while not self._stop.is_set():
                    stream = watch.Watch().stream(  # type: ignore[no-untyped-call]
                        self.core.list_pod_for_all_namespaces,
                        field_selector="spec.nodeName!=",
                        resource_version=version,
                        timeout_seconds=5,
                        allow_watch_bookmarks=True,
                    )
                    for event in stream:
                        raw = event["raw_object"]
                        version = raw["metadata"].get("resourceVersion", version)
                        if event["type"] in ("ADDED", "MODIFIED"):
                            self._handle(raw)
            except ApiException as error:
                if error.status != 410:
                    self.record_problem(f"watch: {error.status} {error.reason}")
                    self._stop.wait(1)
            except Exception as error:
                self.record_problem(f"watch: {error!r}")
                self._stop.wait(1)

    def _handle(self, pod: Pod) -> None:
        uid = pod["metadata"]["uid"]
        deleting = pod["metadata"].get("deletionTimestamp") is not None
        phase = pod.get("status", {}).get("phase", "Pending")
        with self._tasks_lock:
            task = self._tasks.get(uid)
            if task is None and not deleting and phase == "Pending":
                task = self._tasks[uid] = _PodTask(self, pod)
                task.thread.start()
                return
        if not deleting:
            return
        if task is None:
            self._delete(pod["metadata"]["namespace"], pod["metadata"]["name"], uid)
        elif not task.terminating.is_set():
            grace = pod["metadata"].get("deletionGracePeriodSeconds", DEFAULT_GRACE_S)
            task.terminate(float(grace))
            if task.finished.is_set():
                self.confirm_deletion(task)

    # What a kubelet writes.
    def configmaps(self, namespace: str, spec: dict[str, Any]) -> dict[str, Any]:
        """The ConfigMaps the pod's volumes name, as the API server holds them when the pod
        starts (a kubelet also refreshes them while it runs, which this executor does not)."""
        names = set()
        for volume in spec.get("volumes", []):
            if "configMap" in volume:
                names.add(volume["configMap"]["name"])
            for source in volume.get("projected", {}).get("sources", []):
                if "configMap" in source:
                    names.add(source["configMap"]["name"])
        found = {}
        for name in sorted(names):
            try:
                response = self.core.read_namespaced_config_map(
                    name, namespace, _preload_content=False
                )
            except ApiException as error:
                if error.status == 404:
                    continue  # plan_pod mounts it empty if optional, and refuses it if not
                raise
            found[name] = _raw(response)
        return found

    def secrets(self, namespace: str) -> Callable[[str], dict[str, str] | None]:
        """A reader of `namespace`'s Secrets through the API, as a kubelet reads them for a
        container's env: decoded data, None for one that is not there."""

        def read(name: str) -> dict[str, str] | None:
            try:
                response = self.core.read_namespaced_secret(name, namespace, _preload_content=False)
            except ApiException as error:
                if error.status == 404:
                    return None
                raise ContainerConfigError(
                    f'secret "{name}": {error.status} {error.reason}'
                ) from error
            data: dict[str, str] = _raw(response).get("data") or {}
            return {
                key: base64.b64decode(value).decode(errors="surrogateescape")
                for key, value in data.items()
            }

        return read

    def _update_status(self, task: _PodTask, change: Callable[[Pod], None]) -> None:
        for _ in range(10):
            try:
                response = self.core.read_namespaced_pod(
                    task.name, task.namespace, _preload_content=False
                )
                pod = _raw(response)
                if pod["metadata"]["uid"] != task.uid:
                    return
                change(pod)
                # The client sends a dict as it is: the pod exactly as the API returned it.
                self.core.replace_namespaced_pod_status(task.name, task.namespace, pod)  # type: ignore[arg-type]
                return
            except ApiException as error:
                if error.status == 404:
                    return
                if error.status != 409:
                    raise

    def container(self, pod: Pod) -> dict[str, Any]:
        container: dict[str, Any] = pod["spec"]["containers"][0]
        return container

    def _base_status(self, pod: Pod, ready: bool, phase: str) -> None:
        status = pod.setdefault("status", {})
        now = _now()
        status["phase"] = phase
        status.setdefault("startTime", now)
        status["hostIP"] = "127.0.0.1"
        status["hostIPs"] = [{"ip": "127.0.0.1"}]
        if "podIP" not in status:
            ip = next(self._ips)
            status["podIP"], status["podIPs"] = ip, [{"ip": ip}]
        conditions = {c["type"]: c for c in status.get("conditions", [])}
        for kind, value in (
            ("PodReadyToStartContainers", True),
            ("Initialized", True),
            ("Ready", ready),
            ("ContainersReady", ready),
        ):
            current = conditions.get(kind)
            if current is None or current["status"] != str(value):
                conditions[kind] = {
                    "type": kind,
                    "status": str(value),
                    "lastTransitionTime": now,
                    **({} if value or phase == "Running" else {"reason": "PodCompleted"}),
                }
        status["conditions"] = list(conditions.values())

    def write_waiting(self, task: _PodTask, reason: str, message: str = "") -> None:
        def change(pod: Pod) -> None:
            self._base_status(pod, ready=False, phase="Pending")
            container = self.container(pod)
            pod["status"]["containerStatuses"] = [
                {
                    "name": container["name"],
                    "image": container["image"],
                    "imageID": "",
                    "ready": False,
                    "started": False,
                    "restartCount": 0,
                    "state": {
                        "waiting": {"reason": reason, **({"message": message} if message else {})}
                    },
                }
            ]

        self._update_status(task, change)

    def write_running(self, task: _PodTask, started: str) -> None:
        self._register_log(task)

        def change(pod: Pod) -> None:
            self._base_status(pod, ready=True, phase="Running")
            container = self.container(pod)
            pod["status"]["containerStatuses"] = [
                {
                    "name": container["name"],
                    "image": container["image"],
                    "imageID": container["image"],
                    "containerID": f"localcluster://{task.uid}",
                    "ready": True,
                    "started": True,
                    "restartCount": 0,
                    "state": {"running": {"startedAt": started}},
                }
            ]

        self._update_status(task, change)

    def write_terminated(
        self, task: _PodTask, started: str, *, code: int, reason: str, log: str, output: str
    ) -> None:
        def change(pod: Pod) -> None:
            self._base_status(pod, ready=False, phase="Succeeded" if code == 0 else "Failed")
            container = self.container(pod)
            terminated = {
                "exitCode": code,
                "reason": reason,
                "startedAt": started,
                "finishedAt": _now(),
                "containerID": f"localcluster://{task.uid}",
            }
            message = termination_message(container, log, output, failed=code != 0)
            if message:
                terminated["message"] = message
            pod["status"]["containerStatuses"] = [
                {
                    "name": container["name"],
                    "image": container["image"],
                    "imageID": container["image"],
                    "containerID": f"localcluster://{task.uid}",
                    "ready": False,
                    "started": False,
                    "restartCount": 0,
                    "state": {"terminated": terminated},
                }
            ]

        self._update_status(task, change)

    def _log_file(self, task: _PodTask) -> Path:
        return self.workdir / "logs" / task.namespace / f"{task.name}.log"

    def _register_log(self, task: _PodTask) -> None:
        path = self._log_file(task)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch()
        container = self.container(task.pod)["name"]
        logs = {
            "apiVersion": "kwok.x-k8s.io/v1alpha1",
            "kind": "Logs",
            "metadata": {
                "name": task.name,
                "namespace": task.namespace,
                "ownerReferences": [
                    {"apiVersion": "v1", "kind": "Pod", "name": task.name, "uid": task.uid}
                ],
            },
            "spec": {"logs": [{"containers": [container], "logsFile": str(path)}]},
        }
        with contextlib.suppress(ApiException):
            self.custom.create_namespaced_custom_object(
                "kwok.x-k8s.io", "v1alpha1", task.namespace, "logs", logs
            )

    def write_log(self, task: _PodTask, text: str) -> None:
        self._log_file(task).write_text(text, encoding="utf-8")

    def confirm_deletion(self, task: _PodTask) -> None:
        """The kubelet's last word on a pod: its containers are gone, delete it now."""
        self._delete(task.namespace, task.name, task.uid)
        with self._tasks_lock:
            self._tasks.pop(task.uid, None)

    def _delete(self, namespace: str, name: str, uid: str) -> None:
        options = client.V1DeleteOptions(
            grace_period_seconds=0, preconditions=client.V1Preconditions(uid=uid)
        )
        with contextlib.suppress(ApiException):
            self.core.delete_namespaced_pod(name, namespace, body=options)


@contextlib.contextmanager
def running_executor(
    kubeconfig: Path, workdir: Path, rule: Rule | None = None
) -> Iterator[PodExecutor]:
    """An executor working for the cluster of `kubeconfig` until the block ends."""
    api = config.new_client_from_config(str(kubeconfig))  # type: ignore[no-untyped-call]
    executor = PodExecutor(api, workdir, rule).start()
    try:
        yield executor
    finally:
        executor.stop()


def start_executor_process(cluster: Cluster) -> None:
    """Run the executor for `cluster` as one of its processes (what `make cluster` does)."""
    command = [
        sys.executable, "-m", "localcluster", "executor",
        "--kubeconfig", str(cluster.kubeconfig),
        "--workdir", str(cluster.directory / "executor"),
    ]  # fmt: skip
    cluster.processes.append(start("pod-executor", command, cluster.logs / "pod-executor.log"))
    cluster.save()
