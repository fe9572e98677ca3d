"""`make e2e-container`: build the runner image and run the cpu-smoke Job's pods in podman, then
a pod of compiled variants (inductor, which compiles C++ into the pod's /tmp), then a pod whose
model is an OCI artifact on an image volume, pulled and mounted by podman.

Each pod starts as the synthesized Job says (read-only root, uid 10001, no capabilities, no
network, its CPU and memory limits, ConfigMaps mounted read-only), and what it hands the
collector is checked: exit code 0, a last stdout line `BENCH_RESULT {...}` with status ok, and
a termination log of at most 4096 bytes of JSON, both valid against contract/result.schema.json.
"""

import dataclasses
import json
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Final

import jsonschema

from contract.dist import config_text, read_workload
from contract.layout import workload_file
from contract.result import RESULT_PREFIX, SCHEMA_FILE, TERMINATION_LOG_LIMIT, find_result_texts
from localrun.compile_workflow import compile_smoke_checkout
from localrun.loopback_registry import PROGRAM, loopback_registry
from localrun.oci_workflow import OCI_MODEL, oci_smoke_checkout
from localrun.pod import PodPlan, PodRun, pod_plan
from localrun.podman import (
    REPO_ROOT,
    RUNNER_IMAGE,
    Podman,
    PodmanError,
    build_base_image,
    build_image,
    check_call,
    configure_podman,
    image_mount,
    prepare_context,
    run_pod,
)
from localrun.push_model import push_model

WORKLOAD: Final = REPO_ROOT / workload_file("us-east", "cpu-smoke")
APT_PACKAGES: Final = ("podman", "runc", "debootstrap", "docker-registry")
REQUIRED_PROGRAMS: Final = ("podman", "/usr/sbin/runc", "debootstrap", PROGRAM)
RUN_TIMEOUT_S: Final = 600.0
ALL_INDEXES_BUDGET_S: Final = 300.0
"""The other indexes run only when index 0's time says they all fit in this."""

Schema = dict[str, Any]


class CheckFailed(Exception):
    """The container did not hand over what the pod contract promises."""


class Timings:
    """Wall time of each step, printed as a table at the end whatever happened."""

    def __init__(self) -> None:
        self.rows: list[tuple[str, float, str]] = []

    @contextmanager
    def step(self, name: str) -> Iterator[list[str]]:
        """Time the block; what it appends to the yielded list becomes the row's note."""
        notes: list[str] = []
        start = time.monotonic()
        try:
            yield notes
        finally:
            self.rows.append((name, time.monotonic() - start, "; ".join(notes)))

    def table(self) -> str:
        width = max([4, *(len(name) for name, _, _ in self.rows)])
        lines = [f"{'step':<{width}}  {'seconds':>7}  note"]
        lines += [f"{name:<{width}}  {s:7.1f}  {note}" for name, s, note in self.rows]
        return "\n".join(lines)


def _say(message: str) -> None:
    print(f"e2e-container: {message}", flush=True)


def install_tools() -> str:
    """apt-get install podman, runc and debootstrap when any is missing."""
    missing = [program for program in REQUIRED_PROGRAMS if shutil.which(program) is None]
    if not missing:
        return "already installed"
    commands = [
        ["apt-get", "update", "-q"],
        ["apt-get", "install", "-y", "-q", *APT_PACKAGES],
    ]
    for command in commands:
        _say(f"missing {', '.join(missing)}: running {shlex.join(command)}")
        completed = subprocess.run(command, capture_output=True, text=True, check=False)
        if completed.returncode:
            raise PodmanError(f"{shlex.join(command)} failed:\n{completed.stderr[-4000:]}")
    return f"apt-get installed {' '.join(APT_PACKAGES)}"


def _json_problems(text: str, schema: Schema | None, what: str) -> tuple[Any, list[str]]:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as error:
        return None, [f"{what} is not JSON ({error}): {text[:200]!r}"]
    if not isinstance(value, dict):
        return None, [f"{what} is JSON but not an object: {text[:200]!r}"]
    if schema is None:
        return value, []
    validator = jsonschema.validators.validator_for(schema)(schema)
    return value, [
        f"{what}: {'.'.join(map(str, error.absolute_path)) or '(root)'}: {error.message}"
        for error in validator.iter_errors(value)
    ]


def check_run(run: PodRun, schema: Schema) -> list[dict[str, Any]]:
    """The parsed result lines, one per variant the pod ran; raises CheckFailed naming every
    broken promise."""
    problems: list[str] = []
    if run.exit_code != 0:
        problems.append(f"exit code {run.exit_code}, not 0")
    if run.ended_early:
        problems.append(f"the pod was {run.ended_early}")
    lines = run.stdout.splitlines()
    last = lines[-1] if lines else ""
    results: list[dict[str, Any]] = []
    if last.startswith(RESULT_PREFIX):
        for position, text in enumerate(find_result_texts(run.stdout)):
            result, found = _json_problems(text, schema, f"result {position}")
            problems += found
            if result is not None and result.get("status") != "ok":
                problems.append(f"status {result.get('status')!r}: {result.get('error')}")
            results += [result] if result is not None else []
    else:
        problems.append(f"the last stdout line does not start with {RESULT_PREFIX!r}: {last!r}")
    size = len(run.termination_log.encode())
    if size == 0:
        problems.append("the termination log is empty")
    elif size > TERMINATION_LOG_LIMIT:
        problems.append(f"the termination log has {size} bytes (> {TERMINATION_LOG_LIMIT})")
    elif len(results) == 1:
        problems += _json_problems(run.termination_log, schema, "the termination log")[1]
    if problems or not results:
        tail = "\n    ".join(run.stderr.splitlines()[-30:])
        raise CheckFailed(
            "\n  ".join(["", *problems])
            + f"\n  command: {shlex.join(run.command)}\n  container stderr (tail):\n    {tail}"
        )
    return results


def _summary(result: dict[str, Any]) -> str:
    environment = result.get("environment") or {}
    latency = result.get("latency") or {}
    variant = result.get("variant") or {}
    quantization = variant.get("quantization", "none")
    compiled = ((result.get("applied") or {}).get("compiled") or {}).get("toolchain")
    compile_s = (result.get("timings") or {}).get("compile_s")
    return (
        f"{variant.get('model')} {variant.get('precision')}"
        + ("" if quantization == "none" else f" {quantization}")
        + (f" {variant['runtime']} ({compile_s:.1f} s, {compiled})" if compiled else "")
        + f": p50 {latency.get('p50_ms', 0):.3g} ms, threads {environment.get('threads')},"
        f" cpu_quota {environment.get('cpu_quota')}"
    )


def _run_index(
    podman: Podman,
    plan: PodPlan,
    workdir: Path,
    schema: Schema,
    timings: Timings,
    *,
    step: str = "",
) -> tuple[float, list[dict[str, Any]]]:
    start = time.monotonic()
    with timings.step(step or f"run index {plan.index}") as notes:
        run = run_pod(podman, plan, workdir, RUN_TIMEOUT_S)
        _say(f"index {plan.index}: {shlex.join(run.command)}")
        results = check_run(run, schema)
        notes += [_summary(result) for result in results]
        notes.append(f"termination log {len(run.termination_log.encode())} B")
    _say(f"index {plan.index} ok: {'; '.join(notes)}")
    return time.monotonic() - start, results


def run_e2e(workdir: Path, timings: Timings) -> None:
    """Every step of the check, in order; raises at the first failure."""
    with timings.step("install") as notes:
        notes.append(install_tools())
    podman = configure_podman(workdir)
    with timings.step("base image") as notes:
        built = build_base_image(podman)
        notes.append("debootstrap + podman import" if built else "already present, reused")
    with timings.step("build context") as notes:
        context = prepare_context(workdir / "context")
        notes.append(f"pip download: {len(list((context / 'wheels').iterdir()))} wheels")
    with timings.step("image build") as notes:
        build_image(podman, context)
        notes.append(RUNNER_IMAGE)
    schema: Schema = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
    workload = read_workload(WORKLOAD)
    (job,) = workload.jobs
    completions: int = job["spec"].get("completions", 1)

    def plan_for(index: int) -> PodPlan:
        plan = pod_plan(job, workload.configmaps, index, workdir / f"index-{index}")
        # The Job names the registry's image; the one just built stands in for it.
        return dataclasses.replace(plan, image=RUNNER_IMAGE)

    first, _ = _run_index(podman, plan_for(0), workdir, schema, timings)
    if first * (completions - 1) > ALL_INDEXES_BUDGET_S:
        _say(f"index 0 took {first:.0f} s, so indexes 1..{completions - 1} are not run")
    else:
        for index in range(1, completions):
            _run_index(podman, plan_for(index), workdir, schema, timings)
    run_compiled(podman, workdir, schema, timings)
    run_oci_model(podman, workdir, schema, timings)


def run_compiled(podman: Podman, workdir: Path, schema: Schema, timings: Timings) -> None:
    """compile-smoke's pod: inductor compiles each compiled variant's C++ kernels in the
    container, as uid 10001 on a read-only root, into the pod's /tmp."""
    workload = compile_smoke_checkout(workdir / "compile-checkout")
    (job,) = workload.jobs
    plan = pod_plan(job, workload.configmaps, 0, workdir / "compile-index")
    plan = dataclasses.replace(plan, image=RUNNER_IMAGE)
    _, results = _run_index(podman, plan, workdir, schema, timings, step="compiled variants")
    compiled = [r for r in results if (r.get("applied") or {}).get("compiled")]
    if len(compiled) != 2 or any(r["variant"].get("runtime") != "inductor" for r in compiled):
        raise CheckFailed(f"expected 2 variants compiled with inductor, got {len(compiled)}")


def run_oci_model(podman: Podman, workdir: Path, schema: Schema, timings: Timings) -> None:
    """tiny-cnn pushed as an artifact to a loopback registry, its oci-smoke pod run in
    podman with the artifact pulled by podman (containers/image, CRI-O's image library) and
    mounted read-only as an image (`--mount type=image`), not a folder this code unpacked."""
    with loopback_registry(workdir / "registry") as address:
        with timings.step("push model") as notes:
            (workdir / "push").mkdir()
            model = REPO_ROOT / "models" / "examples" / f"{OCI_MODEL}.pt2"
            pushed = push_model(model, f"{address}/benchfleet", workdir / "push", credentials="")
            notes.append(pushed.pinned)
        workload = oci_smoke_checkout(workdir / "oci-checkout", pushed)
        (job,) = workload.jobs
        config = json.loads(config_text(workload.configmaps, job["metadata"]["name"]) or "")
        index = next(v["index"] for v in config["variants"] if v["model"] == OCI_MODEL)
        plan = pod_plan(job, workload.configmaps, index, workdir / "oci-index")
        plan = dataclasses.replace(plan, image=RUNNER_IMAGE)
        try:
            _run_index(podman, plan, workdir, schema, timings)
            with timings.step("image volume read-only") as notes:
                notes.append(_refuses_writes(podman, plan))
        finally:
            subprocess.run(
                podman.command("rmi", "--force", pushed.pinned),
                env=podman.environment(),
                capture_output=True,
                check=False,
            )


def _refuses_writes(podman: Podman, plan: PodPlan) -> str:
    """Try to write into the mounted artifact as the pod's user; PodmanError if it can."""
    (image,) = plan.images
    probe = (
        "import errno, sys\n"
        f"try: open('{image.container_path}/written', 'w')\n"
        "except OSError as e:\n"
        "    sys.exit(None if e.errno in (errno.EROFS, errno.EACCES) else f'not read-only: {e}')\n"
        "sys.exit('the image volume is writable')"
    )
    arguments = ["run", "--rm", "--network", "none", "--user", str(plan.run_as_user)]
    arguments += [*image_mount(image), "--entrypoint", "python3", plan.image, "-c", probe]
    check_call(podman.command(*arguments), podman.environment())
    return f"{image.container_path}: writes refused"


def main() -> int:
    timings = Timings()
    with tempfile.TemporaryDirectory(prefix="benchfleet-e2e-") as scratch:
        try:
            run_e2e(Path(scratch), timings)
        except (PodmanError, CheckFailed) as error:
            print(f"e2e-container: FAILED: {error}", file=sys.stderr)
            return 1
        finally:
            print(timings.table(), flush=True)
    _say(f"ok: {WORKLOAD.relative_to(REPO_ROOT)} ran in podman as its pods would")
    return 0


if __name__ == "__main__":
    sys.exit(main())
