"""`python -m runner` ends with os._exit once the result is out, skipping torch's teardown
(runner/__main__.py): the result must still reach stdout and the termination log whole, with
the exit code of its class."""

import io
import subprocess
import sys
from pathlib import Path

import pytest

from contract.config import PhaseConfig
from contract.errors import ExitCode
from contract.result import OkResult, compact, parse_result, parse_result_line, result_line
from tests.conftest import REPO_ROOT
from tests.runner.conftest import MakeConfig

# Enough iterations that the result line (~3.3 characters a sample) outgrows Python's stdout
# buffer and the termination log must be compacted: both cross a boundary where a lost buffer
# would show.
MANY = PhaseConfig(min_iterations=3000, min_time_s=0.0, max_iterations=3000, max_time_s=60)
TEARDOWN_MARK = "the interpreter's exit handlers ran"


def run_runner(
    command: list[str], config: Path, models: Path, termination_log: Path, index: str
) -> subprocess.CompletedProcess[str]:
    env = {
        "CONFIG_PATH": str(config),
        "MODEL_PATH": str(models),
        "JOB_COMPLETION_INDEX": index,
        "TERMINATION_LOG": str(termination_log),
        "PATH": "/usr/bin:/bin",
    }
    return subprocess.run(
        command, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=120, check=False
    )


@pytest.mark.slow
@pytest.mark.parametrize(
    ("index", "exit_code", "status", "logged"),
    [
        ("0", ExitCode.OK, "ok", "INFO variant 0"),
        ("7", ExitCode.BAD_CONFIG, "error", "ERROR bad_config: index 7 is out of range"),
    ],
)
def test_the_result_is_whole_on_stdout_and_in_the_termination_log_when_the_process_ends(
    make_config: MakeConfig,
    models_dir: Path,
    tmp_path: Path,
    index: str,
    exit_code: ExitCode,
    status: str,
    logged: str,
) -> None:
    config = tmp_path / "config.json"
    config.write_text(make_config().model_copy(update={"measure": MANY}).model_dump_json())
    termination_log = tmp_path / "termination-log"
    done = run_runner([sys.executable, "-m", "runner"], config, models_dir, termination_log, index)
    assert done.returncode == exit_code, done.stderr
    result = parse_result_line(done.stdout)
    assert result is not None and result.status == status
    # Byte for byte what the contract writes for this result: nothing cut, nothing after it.
    assert done.stdout == result_line(result)
    termination_message = termination_log.read_text(encoding="utf-8")
    assert termination_message == compact(result)
    assert logged in done.stderr, "logging's records reach stderr"
    if status == "ok":
        assert len(done.stdout) > io.DEFAULT_BUFFER_SIZE
        summary = parse_result(termination_message)
        assert isinstance(summary, OkResult) and summary.samples_in_log and not summary.compacted


@pytest.mark.slow
def test_the_process_ends_without_the_interpreters_teardown(
    make_config: MakeConfig, models_dir: Path, tmp_path: Path
) -> None:
    """An exit handler registered before the runner starts never runs: the saving is real,
    and main() called in-process (the other tests) still returns."""
    config = tmp_path / "config.json"
    config.write_text(make_config().model_dump_json())
    as_main = (
        "import atexit, runpy, sys; "
        f"atexit.register(lambda: print({TEARDOWN_MARK!r}, file=sys.stderr)); "
        "runpy.run_module('runner', run_name='__main__', alter_sys=True)"
    )
    done = run_runner(
        [sys.executable, "-c", as_main], config, models_dir, tmp_path / "termination-log", "0"
    )
    assert done.returncode == ExitCode.OK, done.stderr
    assert parse_result_line(done.stdout) is not None
    assert TEARDOWN_MARK not in done.stderr
