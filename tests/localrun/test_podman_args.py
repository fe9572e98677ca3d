"""The podman command line gives the container what the cpu-smoke pod spec gives the pod."""

import dataclasses
from pathlib import Path

import pytest

from contract.dist import read_workload
from localrun.images import ImageMount
from localrun.pod import Mount, PodPlan, PodSpecError, pod_plan
from localrun.podman import (
    configure_podman,
    run_arguments,
    runner_requirements,
)
from tests.conftest import REPO_ROOT

WORKLOAD = REPO_ROOT / "dist" / "us-east" / "workloads" / "cpu-smoke.yaml"


def plan_for(index: int, workdir: Path) -> PodPlan:
    workload = read_workload(WORKLOAD)
    (job,) = workload.jobs
    return pod_plan(job, workload.configmaps, index, workdir)


def values(arguments: list[str], option: str) -> list[str]:
    """What follows each occurrence of `option`."""
    return [arguments[i + 1] for i, argument in enumerate(arguments) if argument == option]


@pytest.fixture
def plan(tmp_path: Path) -> PodPlan:
    return plan_for(0, tmp_path / "volumes")


@pytest.fixture
def arguments(plan: PodPlan, tmp_path: Path) -> list[str]:
    return run_arguments(plan, tmp_path / "termination-log")


def test_container_is_removed_after_it_runs_the_jobs_image(
    arguments: list[str], plan: PodPlan
) -> None:
    assert arguments[:2] == ["run", "--rm"]
    assert arguments[-1] == plan.image


def test_a_named_container_can_be_stopped_by_its_name(plan: PodPlan, tmp_path: Path) -> None:
    named = run_arguments(plan, tmp_path / "termination-log", "benchfleet-pod-0-1a2b")
    assert values(named, "--name") == ["benchfleet-pod-0-1a2b"]


def test_container_runs_read_only_as_the_pod_user(arguments: list[str]) -> None:
    assert "--read-only" in arguments
    assert values(arguments, "--user") == ["10001:10001"]


def test_only_empty_dirs_are_writable(arguments: list[str]) -> None:
    """podman's own /run, /tmp and /var/tmp tmpfs would make paths writable a pod lacks."""
    assert "--read-only-tmpfs=false" in arguments
    assert values(arguments, "--tmpfs") == ["/tmp:rw,exec,nosuid,nodev,mode=1777"]


def test_writable_root_stays_writable(plan: PodPlan, tmp_path: Path) -> None:
    writable = dataclasses.replace(plan, read_only_root=False)
    arguments = run_arguments(writable, tmp_path / "termination-log")
    assert "--read-only" not in arguments
    assert "--read-only-tmpfs=false" not in arguments


def test_container_has_no_capabilities_privileges_or_network(arguments: list[str]) -> None:
    assert values(arguments, "--cap-drop") == ["ALL"]
    assert values(arguments, "--security-opt") == ["no-new-privileges"]
    assert values(arguments, "--network") == ["none"]


def test_cpu_and_memory_limits_are_the_jobs(arguments: list[str]) -> None:
    assert values(arguments, "--cpus") == ["4"]
    assert values(arguments, "--memory") == [str(8 * 2**30)]


def test_unlimited_pod_gets_no_limits(plan: PodPlan, tmp_path: Path) -> None:
    unlimited = dataclasses.replace(plan, cpu_limit=None, memory_limit_bytes=None)
    arguments = run_arguments(unlimited, tmp_path / "termination-log")
    assert "--cpus" not in arguments
    assert "--memory" not in arguments


def test_fractional_cpu_limit_is_passed_as_cores(plan: PodPlan, tmp_path: Path) -> None:
    arguments = run_arguments(dataclasses.replace(plan, cpu_limit=0.5), tmp_path / "log")
    assert values(arguments, "--cpus") == ["0.5"]


def test_configmap_volumes_are_mounted_read_only(arguments: list[str], tmp_path: Path) -> None:
    volumes = tmp_path / "volumes"
    assert values(arguments, "-v")[:2] == [
        f"{volumes / 'volume-config'}:/config:ro",
        f"{volumes / 'volume-models'}:/models:ro",
    ]
    assert (volumes / "volume-config" / "config.json").is_file()
    assert sorted(p.name for p in (volumes / "volume-models").iterdir()) == [
        "tiny-cnn.pt2",
        "tiny-mlp.pt2",
        "tiny-transformer.pt2",
    ]


def test_termination_log_is_a_writable_host_file_at_the_message_path(
    arguments: list[str], tmp_path: Path
) -> None:
    assert values(arguments, "-v")[-1] == f"{tmp_path / 'termination-log'}:/dev/termination-log"


@pytest.mark.parametrize("index", [0, 5])
def test_downward_api_env_names_the_pods_index(index: int, tmp_path: Path) -> None:
    arguments = run_arguments(plan_for(index, tmp_path / "volumes"), tmp_path / "log")
    env = dict(value.split("=", 1) for value in values(arguments, "-e"))
    assert env["JOB_COMPLETION_INDEX"] == env["VARIANT_INDEX"] == str(index)
    assert env["CONFIG_PATH"] == "/config/config.json"
    assert env["MODEL_PATH"] == "/models"
    assert env["POD_NAME"].startswith("cpu-smoke-")


def test_gpu_pods_are_refused_rather_than_run_without_gpus(plan: PodPlan, tmp_path: Path) -> None:
    with pytest.raises(PodSpecError, match="GPU"):
        run_arguments(dataclasses.replace(plan, gpus=1), tmp_path / "termination-log")


def test_podman_runs_with_runc_cgroupfs_and_no_default_ulimits(tmp_path: Path) -> None:
    podman = configure_podman(tmp_path)
    assert podman.command("run")[:6] == [
        "podman",
        "--runtime",
        "/usr/sbin/runc",
        "--cgroup-manager",
        "cgroupfs",
        "run",
    ]
    conf = Path(podman.environment()["CONTAINERS_CONF"])
    assert conf.read_text(encoding="utf-8") == "[containers]\ndefault_ulimits = []\n"


def test_image_gets_the_runners_pins_from_pyproject() -> None:
    requirements = runner_requirements()
    assert [r.split(">")[0].split("=")[0] for r in requirements] == [
        "torch",
        "torchao",
        "numpy",
        "nvidia-ml-py",
        "onnxruntime",
        "onnx",
        "onnxscript",
        "boto3",
        "pydantic",
    ]
    assert requirements[0].startswith("torch=="), "an exact pin keeps the CPU wheel"


def test_an_image_of_pypis_torch_takes_onnx_runtimes_gpu_build_in_place_of_its_cpu_build() -> None:
    cpu, cuda = runner_requirements(), runner_requirements(gpu_builds=True)
    assert [pin for pin in cuda if pin not in cpu] == ["onnxruntime-gpu==1.31.1"]
    assert [pin for pin in cpu if pin not in cuda] == ["onnxruntime==1.32.0"]
    assert cuda.index("onnxruntime-gpu==1.31.1") == cpu.index("onnxruntime==1.32.0")


def test_an_image_volume_is_podmans_read_only_image_mount(plan: PodPlan, tmp_path: Path) -> None:
    """podman mounts the image it pulled (no `rw=true`: read-only), at the volume's path."""
    reference = "127.0.0.1:5000/benchfleet/tiny-cnn@sha256:" + "ab" * 32
    with_image = dataclasses.replace(
        plan, images=(ImageMount(reference, "IfNotPresent", "/oci-models/tiny-cnn"),)
    )
    arguments = run_arguments(with_image, tmp_path / "termination-log")
    assert values(arguments, "--mount") == [
        f"type=image,source={reference},destination=/oci-models/tiny-cnn"
    ]
    assert arguments.index("--mount") < arguments.index(with_image.image)


def test_a_file_given_for_the_images_own_is_bind_mounted_read_only_at_its_path(
    plan: PodPlan, tmp_path: Path
) -> None:
    """`--image-file`: in a container it is where the image would hold it, over the image."""
    model = tmp_path / "big.pt2"
    with_file = dataclasses.replace(plan, image_files=(Mount(model, "/opt/models/big.pt2", True),))
    arguments = run_arguments(with_file, tmp_path / "termination-log")
    assert f"{model}:/opt/models/big.pt2:ro" in values(arguments, "-v")
