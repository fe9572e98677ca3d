"""`python -m runner` end to end: the result line, the termination log, and an exit code per
failure class."""

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import jsonschema
import pytest

from contract.config import PhaseConfig, RunConfig, config_part_file
from contract.errors import ExitCode
from contract.instructions import architecture
from contract.result import (
    ENERGY_ON_CPU,
    RESULT_PREFIX,
    SCHEMA_FILE,
    TERMINATION_LOG_LIMIT,
    BenchResult,
    ErrorResult,
    OkResult,
    parse_result,
    parse_result_line,
)
from report.intervals import from_samples
from runner.__main__ import main
from runner.environment import cpu_flags
from tests.conftest import REPO_ROOT
from tests.output_models import export_encoder
from tests.runner.conftest import MakeConfig, python_m_runner, sha256_of


def write_config(config: RunConfig, folder: Path) -> Path:
    path = folder / "config.json"
    path.write_text(config.model_dump_json(), encoding="utf-8")
    return path


def run_main(
    capsys: pytest.CaptureFixture[str],
    config_path: Path,
    models: Path,
    tmp_path: Path,
    index: str = "0",
    ca: Path | None = None,
) -> tuple[int, BenchResult, str]:
    """main() in this process (its downloads trusting the bundles in `ca`); returns the exit
    code, the parsed result and the termination log."""
    log = tmp_path / "termination-log"
    bundles = ["--ca", str(ca)] if ca is not None else []
    code = main(
        [
            "--config",
            str(config_path),
            "--models",
            str(models),
            "--index",
            index,
            "--termination-log",
            str(log),
            *bundles,
        ]
    )
    out = capsys.readouterr().out
    assert out.count("\n") == 1 and out.startswith(RESULT_PREFIX), (
        "stdout holds exactly the result line"
    )
    result = parse_result_line(out)
    assert result is not None
    return code, result, log.read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def result_schema() -> dict[str, object]:
    return json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))  # type: ignore[no-any-return]


def test_a_successful_run_exits_zero_with_a_schema_valid_result(
    capsys: pytest.CaptureFixture[str],
    make_config: MakeConfig,
    models_dir: Path,
    tmp_path: Path,
    result_schema: dict[str, object],
) -> None:
    code, result, termination_log = run_main(
        capsys, write_config(make_config(), tmp_path), models_dir, tmp_path
    )
    assert code == ExitCode.OK and isinstance(result, OkResult)
    assert result.latency.count >= 3
    assert result.timings is not None and result.timings.warmup.iterations >= 3
    config = make_config()
    assert result.timings.bound_s == config.warmup.max_time_s + config.measure.max_time_s
    # The machine as contract/instructions.py reads it: this CPU's extensions, no GPU.
    assert result.environment is not None and result.environment.gpu_capability is None
    assert result.environment.cpu_flags == cpu_flags()
    assert architecture(result.environment.cpu_flags or ()) in ("x86", "arm")
    # A CPU target has no energy counter, and its result says so.
    assert result.energy is not None
    assert (result.energy.joules, result.energy.unavailable) == (None, ENERGY_ON_CPU)
    jsonschema.validate(result.model_dump(mode="json", exclude_none=True), result_schema)
    assert result.samples is not None
    copy = result.model_copy(update={"samples": None, "samples_in_log": True})
    assert parse_result(termination_log) == copy, "all but the samples, whatever their count"


def test_every_iteration_travels_in_the_log_line_and_the_termination_log_keeps_all_else(
    capsys: pytest.CaptureFixture[str], make_config: MakeConfig, models_dir: Path, tmp_path: Path
) -> None:
    many = PhaseConfig(min_iterations=3000, min_time_s=0.0, max_iterations=3000, max_time_s=60)
    config = make_config().model_copy(update={"measure": many})
    code, result, termination_log = run_main(
        capsys, write_config(config, tmp_path), models_dir, tmp_path
    )
    assert code == ExitCode.OK and isinstance(result, OkResult)
    assert result.samples is not None and result.validity is not None
    durations = result.samples.durations_ns()
    assert len(durations) == result.latency.count == 3000
    assert min(durations) / 1e6 == pytest.approx(result.latency.min_ms)
    assert result.contention is not None and result.contention.threads >= 1
    assert None not in (result.validity.contended, result.validity.stopped_early)
    assert result.gpu is None and result.validity.gpu_throttled is None
    summary = parse_result(termination_log)
    assert isinstance(summary, OkResult) and not summary.compacted and summary.samples is None
    assert summary.samples_in_log, "the copy says where the samples are"
    assert summary.model_copy(update={"samples_in_log": False, "samples": result.samples}) == result
    interval = result.latency.p50_interval
    assert interval is not None and interval.log_se is not None
    estimate = from_samples([ns / 1e6 for ns in durations])
    assert (interval.low_ms, interval.high_ms) == (estimate.low, estimate.high)
    assert interval.log_se == pytest.approx(estimate.log_se), "the report needs no samples"


@pytest.mark.parametrize(
    ("change", "exit_code", "error_type", "message"),
    [
        (
            {"sha256": "0" * 64},
            ExitCode.MODEL_MISMATCH,
            "model_mismatch",
            "config.json expects 0000",
        ),
        ({"location": "absent.pt2"}, ExitCode.MODEL_LOAD, "model_load", "does not exist"),
        ({"device_type": "nvidia-t4"}, ExitCode.DEVICE_MISSING, "device_missing", "needs 1 GPU"),
        (
            {"precision": "tf32"},
            ExitCode.UNSUPPORTED_VARIANT,
            "unsupported_variant",
            "CUDA math mode",
        ),
        ({"model": "tiny-cnn", "batch_size": 1}, ExitCode.OK, None, None),
    ],
)
def test_each_failure_class_has_its_exit_code_and_error_type(
    capsys: pytest.CaptureFixture[str],
    make_config: MakeConfig,
    models_dir: Path,
    tmp_path: Path,
    change: dict[str, object],
    exit_code: ExitCode,
    error_type: str | None,
    message: str | None,
) -> None:
    config_path = write_config(make_config(**change), tmp_path)
    code, result, _ = run_main(capsys, config_path, models_dir, tmp_path)
    assert code == exit_code
    if error_type is None:
        assert isinstance(result, OkResult)
    else:
        assert isinstance(result, ErrorResult) and result.error.type == error_type
        assert message is not None and message in result.error.message
    # An error result still says which variant failed, for a collector without config.json.
    assert result.variant is not None and result.variant.index == 0
    # And the stack it failed on: a GPU target without its GPU says why there are no GPU fields.
    assert result.fingerprint is not None and result.fingerprint.cpu_model
    assert (result.fingerprint.driver_version, result.fingerprint.unavailable) == (
        (None, "torch sees no GPU") if error_type == "device_missing" else (None, None)
    )


def test_memory_that_runs_out_is_its_own_failure_class(
    capsys: pytest.CaptureFixture[str],
    make_config: MakeConfig,
    unbounded_batch_model: Path,
    tmp_path: Path,
) -> None:
    model = unbounded_batch_model
    config = make_config(batch_size=1 << 42, location=model.name, sha256=sha256_of(model))
    code, result, _ = run_main(capsys, write_config(config, tmp_path), model.parent, tmp_path)
    assert code == ExitCode.OUT_OF_MEMORY
    assert isinstance(result, ErrorResult) and result.error.type == "out_of_memory"
    assert "can't allocate memory" in result.error.message


def test_a_model_whose_inputs_do_not_fit_is_a_config_error(
    capsys: pytest.CaptureFixture[str], make_config: MakeConfig, models_dir: Path, tmp_path: Path
) -> None:
    config = make_config()
    wrong = config.model_copy(
        update={
            "variants": (
                config.variants[0].model_copy(update={"inputs": config.variants[1:] or ()}),
            )
        }
    )
    code, result, _ = run_main(capsys, write_config(wrong, tmp_path), models_dir, tmp_path)
    assert code == ExitCode.BAD_CONFIG
    assert isinstance(result, ErrorResult) and "check the spec's inputs" in result.error.message


@pytest.mark.parametrize(
    ("content", "index", "message"),
    [
        ("{not json", "0", "not a valid config.json"),
        (None, "0", "cannot read"),
        ("valid", "7", "index 7 is out of range: config.json has variants 0..0"),
        ("valid", "seven", "'seven' is not an integer"),
    ],
)
def test_bad_config_exits_with_its_own_code(
    capsys: pytest.CaptureFixture[str],
    make_config: MakeConfig,
    models_dir: Path,
    tmp_path: Path,
    content: str | None,
    index: str,
    message: str,
) -> None:
    path = tmp_path / "config.json"
    if content == "valid":
        write_config(make_config(), tmp_path)
    elif content is not None:
        path.write_text(content, encoding="utf-8")
    code, result, _ = run_main(capsys, path, models_dir, tmp_path, index=index)
    assert code == ExitCode.BAD_CONFIG
    assert isinstance(result, ErrorResult) and message in result.error.message


def write_parts(text: str, folder: Path, numbers: range, count: int) -> Path:
    """`text` cut into `count` pieces, the `numbers` of them written as synth's parts of a
    config.json too large for one ConfigMap; the path config.json would have."""
    size = -(-len(text) // count)
    for number in numbers:
        piece = text[(number - 1) * size : number * size]
        (folder / config_part_file(number, count)).write_text(piece, encoding="utf-8")
    return folder / "config.json"


def test_a_config_json_in_parts_is_read_joined(
    capsys: pytest.CaptureFixture[str], make_config: MakeConfig, models_dir: Path, tmp_path: Path
) -> None:
    """As the projected volume of a split Job lays them out: no config.json, its parts."""
    path = write_parts(make_config().model_dump_json(indent=2), tmp_path, range(1, 4), 3)
    code, result, _ = run_main(capsys, path, models_dir, tmp_path)
    assert code == ExitCode.OK and isinstance(result, OkResult)


def test_a_config_json_missing_a_part_is_bad_config(
    capsys: pytest.CaptureFixture[str], make_config: MakeConfig, models_dir: Path, tmp_path: Path
) -> None:
    path = write_parts(make_config().model_dump_json(indent=2), tmp_path, range(1, 3), 3)
    code, result, _ = run_main(capsys, path, models_dir, tmp_path)
    assert code == ExitCode.BAD_CONFIG and isinstance(result, ErrorResult)
    assert "not every part of one config.json; found config.json.1-of-3, config.json.2-of-3" in (
        result.error.message
    )


def pod_env(config_path: Path, models_dir: Path, tmp_path: Path) -> dict[str, str]:
    """A pod's env for index 0, its termination log at tmp_path/log, and only PATH besides."""
    return {
        "CONFIG_PATH": str(config_path),
        "MODEL_PATH": str(models_dir),
        "JOB_COMPLETION_INDEX": "0",
        "TERMINATION_LOG": str(tmp_path / "log"),
        "PATH": "/usr/bin:/bin",
    }


@pytest.mark.slow
def test_the_process_prints_only_the_result_on_stdout_and_logs_on_stderr(
    make_config: MakeConfig, models_dir: Path, tmp_path: Path
) -> None:
    config_path = write_config(make_config("tiny-cnn", precision="bf16", batch_size=1), tmp_path)
    env = {**pod_env(config_path, models_dir, tmp_path), "NODE_NAME": "node-7"}
    done = python_m_runner(env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("\n") == 1
    result = parse_result_line(done.stdout)
    assert result is not None and result.environment is not None
    assert result.environment.node_name == "node-7"
    assert "variant 0" in done.stderr


@pytest.mark.slow
def test_a_pods_result_tells_its_start_up_phase_by_phase(
    make_config: MakeConfig, models_dir: Path, tmp_path: Path
) -> None:
    """The process's own start (the interpreter and torch's import) before the runner's code,
    the model's fetch and load, the module's copy: each comes before the timed loop, which
    starts that long after the process did."""
    config_path = write_config(make_config("tiny-cnn"), tmp_path)
    done = python_m_runner(pod_env(config_path, models_dir, tmp_path))
    assert done.returncode == 0, done.stderr
    result = parse_result(Path(tmp_path / "log").read_text(encoding="utf-8"))
    assert isinstance(result, OkResult) and result.timings is not None
    timings = result.timings
    assert timings.model is not None and timings.model.source == "file"
    assert timings.model.file_bytes == (models_dir / "tiny-cnn.pt2").stat().st_size
    assert timings.process_s is not None and timings.process_s > 0
    assert timings.copy_s is not None and timings.measure_start_s is not None
    before_loop = (
        timings.process_s
        + timings.load_s
        + timings.prepare_s
        + timings.first_iteration_ms / 1000
        + timings.warmup.seconds
    )
    assert timings.measure_start_s >= before_loop, "the phases are disjoint and in order"


def test_an_oversized_result_is_compacted_to_fit_the_termination_log(
    capsys: pytest.CaptureFixture[str], make_config: MakeConfig, models_dir: Path, tmp_path: Path
) -> None:
    huge = "m" * 20_000
    config = make_config(location=f"{huge}.pt2")
    code, result, termination_log = run_main(
        capsys, write_config(config, tmp_path), models_dir, tmp_path
    )
    assert code == ExitCode.MODEL_LOAD
    assert isinstance(result, ErrorResult) and huge in result.error.message
    assert len(termination_log.encode()) <= TERMINATION_LOG_LIMIT
    compacted = parse_result(termination_log)
    assert (
        isinstance(compacted, ErrorResult)
        and compacted.compacted
        and compacted.error.type == "model_load"
    )


@pytest.mark.slow
def test_sigterm_ends_the_run_at_once_with_a_terminated_result(
    make_config: MakeConfig, models_dir: Path, tmp_path: Path
) -> None:
    """As PID 1 in a pod the runner would ignore SIGTERM and be killed after the grace period
    with no result; it handles the signal instead."""
    endless = PhaseConfig(min_iterations=1, min_time_s=600, max_iterations=10**9, max_time_s=600)
    config = make_config().model_copy(update={"measure": endless})
    termination_log = tmp_path / "log"
    env = {
        "CONFIG_PATH": str(write_config(config, tmp_path)),
        "MODEL_PATH": str(models_dir),
        "TERMINATION_LOG": str(termination_log),
        "PATH": "/usr/bin:/bin",
    }
    process = subprocess.Popen(
        [sys.executable, "-m", "runner"],
        cwd=REPO_ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stderr is not None
    for line in process.stderr:
        if "variant 0" in line:
            break
    time.sleep(2)  # past loading, into the timed loop
    process.send_signal(signal.SIGTERM)
    stdout, _ = process.communicate(timeout=30)
    assert process.returncode == ExitCode.TERMINATED
    result = parse_result_line(stdout)
    assert isinstance(result, ErrorResult)
    assert result.error.type == "terminated" and "SIGTERM" in result.error.message
    assert result.variant is not None and result.variant.model == "tiny-mlp"
    assert json.loads(termination_log.read_text())["error"]["type"] == "terminated"


def test_a_program_returning_a_dict_of_tensors_is_measured_and_its_output_checked(
    capsys: pytest.CaptureFixture[str], make_config: MakeConfig, tmp_path: Path
) -> None:
    """A Hugging Face-style model returning a dict: its output's dtype and finiteness are
    read from every tensor in it, not from a first element a dict does not have."""
    path = export_encoder("dict", tmp_path / "encoder.pt2")
    config = make_config("encoder", location=path.name, sha256=sha256_of(path))
    code, result, _ = run_main(capsys, write_config(config, tmp_path), tmp_path, tmp_path)
    assert code == ExitCode.OK and isinstance(result, OkResult)
    assert result.applied is not None and result.applied.output_dtype == "float32"
    assert result.validity is not None and result.validity.output_finite is True
