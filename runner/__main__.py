"""`python -m runner`: measure the variant of this pod and print its result.

Reads the pod's env as synth writes it: CONFIG_PATH (config.json), MODEL_PATH (the models'
folder), JOB_COMPLETION_INDEX (set by Kubernetes for Indexed Jobs; VARIANT_INDEX is the same
value from the downward API). Logs go to stderr; the last stdout line is the result.
"""

import argparse
import logging
import os
import signal
import sys
import tempfile
from pathlib import Path
from typing import NoReturn

from pydantic import ValidationError

from contract.config import CONFIG_DIR, CONFIG_FILE, MODELS_DIR, RunConfig
from contract.errors import ExitCode
from contract.result import BenchResult, ErrorInfo, ErrorResult
from contract.variant import VariantRef
from runner.channel import emit
from runner.errors import ConfigError, RunnerError, Terminated
from runner.run import RunPaths, run_variant

log = logging.getLogger("runner")


def _arguments(argv: list[str] | None) -> argparse.Namespace:
    env = os.environ
    parser = argparse.ArgumentParser(prog="python -m runner", description=__doc__)
    parser.add_argument(
        "--config", type=Path, default=Path(env.get("CONFIG_PATH", f"{CONFIG_DIR}/{CONFIG_FILE}"))
    )
    parser.add_argument("--models", type=Path, default=Path(env.get("MODEL_PATH", MODELS_DIR)))
    parser.add_argument(
        "--index", default=env.get("JOB_COMPLETION_INDEX", env.get("VARIANT_INDEX", "0"))
    )
    parser.add_argument(
        "--termination-log",
        type=Path,
        default=Path(env.get("TERMINATION_LOG", "/dev/termination-log")),
    )
    return parser.parse_args(argv)


def _read_config(path: Path) -> RunConfig:
    try:
        return RunConfig.model_validate_json(path.read_bytes())
    except OSError as error:
        raise ConfigError(f"cannot read {path}: {error.strerror}") from error
    except ValidationError as error:
        raise ConfigError(f"{path} is not a valid config.json: {error}") from error


def _index(text: str) -> int:
    try:
        return int(text)
    except ValueError as error:
        raise ConfigError(f"the variant index {text!r} is not an integer") from error


def _failure(error: RunnerError | Terminated, config: RunConfig | None, index: str) -> BenchResult:
    """The error result, naming the variant when config.json and the index say which."""
    variants = {str(v.index): v for v in config.variants} if config else {}
    return ErrorResult(
        workflow=config.workflow if config else None,
        target=config.target if config else None,
        variant=VariantRef.of(variants[index]) if index in variants else None,
        error=ErrorInfo(type=error.error_type, message=str(error)),
    )


def _on_sigterm(signum: int, frame: object) -> None:
    raise Terminated(
        "SIGTERM: the pod is being deleted (preemption, eviction, the Job's deadline or a "
        "node drain) before the variant finished"
    )


def main(argv: list[str] | None = None) -> int:
    """Run one variant and return the process's exit code."""
    logging.basicConfig(
        stream=sys.stderr, level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s"
    )
    args = _arguments(argv)
    config: RunConfig | None = None
    result: BenchResult
    try:
        config = _read_config(args.config)
        scratch = Path(tempfile.mkdtemp(prefix="benchfleet-"))
        result = run_variant(config, _index(args.index), RunPaths(args.models, scratch))
        code = ExitCode.OK
    except (RunnerError, Terminated) as error:
        log.error("%s: %s", error.error_type, error)
        result, code = _failure(error, config, args.index), error.exit_code
    except Exception as error:
        log.exception("internal error")
        internal = RunnerError(f"{type(error).__name__}: {error}")
        result, code = _failure(internal, config, args.index), internal.exit_code
    emit(result, sys.stdout, args.termination_log)
    return int(code)


def _exit_at_once(code: int) -> NoReturn:
    """End the process without the interpreter's teardown, once the result is out.

    Tearing torch down takes 1-2 s (bench/runner_startup.py), and a pod of an Indexed
    Job is not done until its process exits. Nothing in that teardown matters to the result:
    emit has closed the termination log and flushed the line, so both are already the
    kernel's, which keeps them past the process (an fsync would guard only against the node
    failing, which loses the pod anyway); the exit handlers skipped are torch's debug
    statistics and locks the runner never takes. Only Python's own buffers would be lost, so
    they are flushed here, logging's included.
    """
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, _on_sigterm)
    _exit_at_once(main())
