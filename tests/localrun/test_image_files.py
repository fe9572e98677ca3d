"""`localrun run --image-file PATH=FILE`: a model baked into the runner image, tried from a
file here, checked against the spec's sha256 before any pod starts."""

import hashlib
import json
import sqlite3
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from contract.config import CONFIG_FILE
from contract.dist import Workload, read_workload
from localrun.__main__ import main
from localrun.image_files import ImageFileError, image_files, parse_image_files
from localrun.pod import Mount, PodPlan
from localrun.workflow import pod_plans
from tests.conftest import REPO_ROOT
from tests.recordings import frames, write_recording

SMOKE = REPO_ROOT / "dist" / "us-east" / "workloads" / "cpu-smoke.yaml"
QUICK = {"min_iterations": 3, "min_time_s": 0.0, "max_iterations": 5, "max_time_s": 5.0}

MODEL = REPO_ROOT / "models" / "examples" / "tiny-mlp.pt2"
IN_IMAGE = "/opt/models/tiny-mlp.pt2"


def baked(workload: Workload) -> Workload:
    """cpu-smoke with tiny-mlp baked into the image at IN_IMAGE."""
    configmaps = dict(workload.configmaps)
    for name, configmap in configmaps.items():
        if CONFIG_FILE in configmap.get("data", {}):
            config = json.loads(configmap["data"][CONFIG_FILE])
            sha256 = config["models"]["tiny-mlp"]["sha256"]
            config["models"]["tiny-mlp"] = {
                "source": "image_path",
                "location": IN_IMAGE,
                "sha256": sha256,
            }
            config["warmup"] = config["measure"] = QUICK
            configmaps[name] = {**configmap, "data": {CONFIG_FILE: json.dumps(config)}}
    return Workload(workload.jobs, configmaps)


@pytest.fixture
def workload() -> Workload:
    return baked(read_workload(SMOKE))


@pytest.fixture
def plans(workload: Workload, tmp_path: Path) -> list[PodPlan]:
    return list(pod_plans(workload, tmp_path))


def test_a_given_file_of_the_pinned_bytes_is_mounted_read_only_at_its_path(
    workload: Workload, plans: list[PodPlan]
) -> None:
    given = parse_image_files([f"{IN_IMAGE}={MODEL}"])
    assert image_files(given, workload, plans) == (Mount(MODEL, IN_IMAGE, read_only=True),)


@pytest.mark.parametrize(
    ("values", "words"),
    [
        (["/opt/models/tiny-mlp.pt2"], "give PATH=FILE"),
        ([f"opt/models/tiny-mlp.pt2={MODEL}"], "absolute image_path"),
        ([f"{IN_IMAGE}="], "give PATH=FILE"),
        ([f"{IN_IMAGE}={MODEL}", f"{IN_IMAGE}={MODEL}"], "gives /opt/models/tiny-mlp.pt2 twice"),
    ],
)
def test_an_option_that_is_not_path_equals_file_is_refused(values: list[str], words: str) -> None:
    with pytest.raises(ImageFileError, match=words):
        parse_image_files(values)


def test_a_pod_that_runs_a_baked_in_model_needs_its_file(
    workload: Workload, plans: list[PodPlan]
) -> None:
    with pytest.raises(ImageFileError, match=rf"model tiny-mlp is baked .* at {IN_IMAGE}"):
        image_files({}, workload, plans)
    # Pods that do not run tiny-mlp (cpu-smoke's index 1 onwards) need nothing.
    others = [plan for plan in plans if plan.index >= 2]
    assert image_files({}, workload, others) == ()


def test_a_path_no_model_is_at_names_those_there_are(
    workload: Workload, plans: list[PodPlan]
) -> None:
    given = {IN_IMAGE: MODEL, "/opt/models/tiny-mpl.pt2": MODEL}
    with pytest.raises(ImageFileError, match=f"tiny-mpl.pt2: no image_path model .* {IN_IMAGE}"):
        image_files(given, workload, plans)


def test_a_file_of_other_bytes_is_refused_before_any_pod_starts(
    workload: Workload, plans: list[PodPlan], tmp_path: Path
) -> None:
    other = tmp_path / "other.pt2"
    other.write_bytes(b"not the model")
    digest = hashlib.sha256(b"not the model").hexdigest()
    with pytest.raises(ImageFileError, match=f"has sha256 {digest}, but the spec pins"):
        image_files({IN_IMAGE: other}, workload, plans)
    with pytest.raises(ImageFileError, match="No such file"):
        image_files({IN_IMAGE: tmp_path / "absent.pt2"}, workload, plans)


def test_a_local_try_measures_a_baked_in_model_from_the_file_given(
    workload: Workload, tmp_path: Path
) -> None:
    workloads = tmp_path / "dist" / "us-east" / "workloads"
    workloads.mkdir(parents=True)
    objects = [*workload.jobs, *workload.configmaps.values()]
    (workloads / SMOKE.name).write_text(yaml.safe_dump_all(objects), encoding="utf-8")
    command = ["cpu-smoke", "--root", str(tmp_path), "--index", "0"]
    refused = CliRunner().invoke(main, command)
    assert refused.exit_code == 1
    assert f"model tiny-mlp is baked into the runner image at {IN_IMAGE}" in refused.output
    assert "running" not in refused.output, "no pod started"
    run = CliRunner().invoke(main, [*command, "--image-file", f"{IN_IMAGE}={MODEL}"])
    assert run.exit_code == 0, run.output
    assert "index 0: ok" in run.output and "tiny-mlp" in run.stdout


REPLAYED = "/opt/recordings/frames.safetensors"


def replaying(workload: Workload, recording: Path) -> Workload:
    """`workload` replaying `recording`, baked into the image at REPLAYED."""
    configmaps = dict(workload.configmaps)
    for name, configmap in configmaps.items():
        if CONFIG_FILE in configmap.get("data", {}):
            config = json.loads(configmap["data"][CONFIG_FILE])
            config["recorded_inputs"] = {
                "source": "image_path",
                "location": REPLAYED,
                "sha256": hashlib.sha256(recording.read_bytes()).hexdigest(),
            }
            configmaps[name] = {**configmap, "data": {CONFIG_FILE: json.dumps(config)}}
    return Workload(workload.jobs, configmaps)


@pytest.mark.slow
def test_a_local_try_replays_recorded_inputs_baked_into_the_image_from_the_file_given(
    workload: Workload, tmp_path: Path
) -> None:
    recording = write_recording(tmp_path / "frames.safetensors", frames("input", 5, (64,)))
    workloads = tmp_path / "dist" / "us-east" / "workloads"
    workloads.mkdir(parents=True)
    replayed = replaying(workload, recording)
    objects = [*replayed.jobs, *replayed.configmaps.values()]
    (workloads / SMOKE.name).write_text(yaml.safe_dump_all(objects), encoding="utf-8")
    command = ["cpu-smoke", "--root", str(tmp_path), "--index", "0"]
    command += ["--image-file", f"{IN_IMAGE}={MODEL}"]
    refused = CliRunner().invoke(main, command)
    assert refused.exit_code == 1
    assert f"the recorded inputs are baked into the runner image at {REPLAYED}" in refused.output
    run = CliRunner().invoke(main, [*command, "--image-file", f"{REPLAYED}={recording}"])
    assert run.exit_code == 0, run.output
    assert "index 0: ok" in run.output
    with sqlite3.connect(tmp_path / ".benchfleet" / "results.sqlite") as database:
        (stored,) = database.execute("SELECT result_json FROM variant_runs").fetchall()
    assert json.loads(stored[0])["recorded_inputs"] == {
        "sha256": hashlib.sha256(recording.read_bytes()).hexdigest(),
        "samples": 5,
    }
