"""`python -m runner`: measure the variants of this pod and print a result for each.

Reads the pod's env as synth writes it: CONFIG_PATH (config.json, or beside it its parts
where synth split it), MODEL_PATH (the models' folder), CA_PATH (the CA bundles downloads
trust), OCI_MODEL_PATH (the folder of the oci models' image volumes), IMAGE_ROOT (where
image_path models are: / unless a local try says otherwise), JOB_COMPLETION_INDEX (set by
Kubernetes for Indexed Jobs; VARIANT_INDEX is the same value from the downward API), which
picks the group of variants the pod runs, in order, in this one process, and for a group
REPORTED_PATH (contract/reported.py), which lists those an earlier attempt of the index
already reported, and where the pod names a result lake (contract/lake.py) its URL, the
cluster, the Job and the pod's names and the standard AWS variables (runner/lake.py). Logs
and progress lines (contract/progress.py) go to stderr; stdout has
one result line per variant, each written as its variant ends.
"""

import argparse
import logging
import os
import shutil
import signal
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

from pydantic import ValidationError

from contract.config import (
    CA_DIR,
    CA_ENV,
    CONFIG_DIR,
    CONFIG_FILE,
    IMAGE_ROOT_ENV,
    MODELS_DIR,
    OCI_MODEL_PATH_ENV,
    OCI_MODELS_DIR,
    RunConfig,
    VariantConfig,
    read_config_bytes,
)
from contract.errors import ExitCode, most_severe
from contract.reported import REPORTED_ENV, read_reported
from contract.result import BenchResult, ErrorInfo, ErrorResult, OkResult
from contract.variant import VariantRef
from runner import progress
from runner.accuracy import References
from runner.channel import emit
from runner.compiling import keep_caches_in
from runner.errors import ConfigError, RunnerError, Terminated
from runner.fingerprint import failure_fingerprint
from runner.lake import ResultLake
from runner.programs import Programs
from runner.rounds import runs
from runner.run import (
    Prepared,
    RunPaths,
    pick_group,
    prepare_variant,
    run_interleaved,
    run_variant,
)
from runner.startup import since_start

log = logging.getLogger("runner")


def _arguments(argv: list[str] | None) -> argparse.Namespace:
    env = os.environ
    parser = argparse.ArgumentParser(prog="python -m runner", description=__doc__)
    parser.add_argument(
        "--config", type=Path, default=Path(env.get("CONFIG_PATH", f"{CONFIG_DIR}/{CONFIG_FILE}"))
    )
    parser.add_argument("--models", type=Path, default=Path(env.get("MODEL_PATH", MODELS_DIR)))
    parser.add_argument(
        "--ca",
        type=Path,
        default=Path(env.get(CA_ENV, CA_DIR)),
        help="the folder of CA bundles that downloads may trust, as config.json names them",
    )
    parser.add_argument(
        "--oci-models",
        type=Path,
        default=Path(env.get(OCI_MODEL_PATH_ENV, OCI_MODELS_DIR)),
        help="the folder holding each oci model's image volume",
    )
    parser.add_argument(
        "--image-root",
        type=Path,
        default=Path(env.get(IMAGE_ROOT_ENV, "/")),
        help="the folder image_path models are found under: the image's root in a pod",
    )
    parser.add_argument(
        "--index", default=env.get("JOB_COMPLETION_INDEX", env.get("VARIANT_INDEX", "0"))
    )
    parser.add_argument(
        "--reported",
        type=Path,
        default=Path(env[REPORTED_ENV]) if REPORTED_ENV in env else None,
        help="the folder of ids an earlier attempt reported, a file per index",
    )
    parser.add_argument(
        "--termination-log",
        type=Path,
        default=Path(env.get("TERMINATION_LOG", "/dev/termination-log")),
    )
    return parser.parse_args(argv)


def _read_config(path: Path) -> RunConfig:
    try:
        return RunConfig.model_validate_json(read_config_bytes(path))
    except OSError as error:
        raise ConfigError(f"cannot read {path}: {error.strerror}") from error
    except ValidationError as error:
        raise ConfigError(f"{path} is not a valid config.json: {error}") from error
    except ValueError as error:
        raise ConfigError(f"cannot read {path}: {error}") from error


def _index(text: str) -> int:
    try:
        return int(text)
    except ValueError as error:
        raise ConfigError(f"the variant index {text!r} is not an integer") from error


def _failure(
    error: RunnerError | Terminated, config: RunConfig | None, variant: VariantConfig | None
) -> BenchResult:
    """The error result, naming the variant when config.json and the index say which."""
    return ErrorResult(
        workflow=config.workflow if config else None,
        target=config.target if config else None,
        variant=VariantRef.of(variant) if variant else None,
        error=ErrorInfo(type=error.error_type, message=str(error)),
        fingerprint=failure_fingerprint(config.device_type) if config else None,
    )


Outcome = tuple[BenchResult, ExitCode]


def _failures(
    error: Exception, config: RunConfig, variants: Sequence[VariantConfig]
) -> list[Outcome]:
    """`error` as the error result of each of `variants`: a failure there is theirs alone, and
    the group goes on (a SIGTERM, which ends the pod, is not an Exception and passes)."""
    names = ", ".join(str(variant.index) for variant in variants)
    if isinstance(error, RunnerError):
        log.error("variant %s: %s: %s", names, error.error_type, error)
        failure = error
    else:
        log.exception("variant %s: internal error", names)
        failure = RunnerError(f"{type(error).__name__}: {error}")
    return [(_failure(failure, config, variant), failure.exit_code) for variant in variants]


def _run(
    config: RunConfig,
    variant: VariantConfig,
    paths: RunPaths,
    programs: Programs,
    references: References,
) -> list[Outcome]:
    """One variant of the group: its result, or its own error result."""
    try:
        return [(run_variant(config, variant, paths, programs, references), ExitCode.OK)]
    except Exception as error:
        return _failures(error, config, (variant,))


def _run_interleaved(
    config: RunConfig,
    variants: Sequence[VariantConfig],
    programs: Programs,
    references: References,
) -> list[Outcome]:
    """Variants of one model in alternating rounds: those that fail to prepare report their
    error, the others are measured together."""
    outcomes: list[Outcome] = []
    prepared: list[Prepared] = []
    for variant in variants:
        try:
            prepared.append(prepare_variant(config, variant, programs, references))
        except Exception as error:
            outcomes += _failures(error, config, (variant,))
    if prepared:
        try:
            outcomes += [(result, ExitCode.OK) for result in run_interleaved(config, prepared)]
        except Exception as error:
            outcomes += _failures(error, config, [ready.variant for ready in prepared])
    return outcomes


def _not_reported(
    unit: Sequence[VariantConfig], reported: Path | None, index: int
) -> tuple[VariantConfig, ...]:
    """The variants of `unit` that no earlier attempt of this index reported. Read before each
    unit, not once: the collector may hand the list back after this pod started."""
    if reported is None:
        return tuple(unit)
    try:
        done = read_reported(reported, index)
    except ValueError as error:
        log.warning("%s: running every variant", error)
        return tuple(unit)
    for variant in unit:
        if variant.id in done:
            log.info(
                "variant %d (%s, %s): an earlier attempt of this index measured it and the "
                "collector stored that: not run again",
                variant.index,
                variant.id,
                variant.describe(),
            )
    return tuple(variant for variant in unit if variant.id not in done)


def _with_process_time(result: BenchResult, seconds: float | None) -> BenchResult:
    """`result` with the time its process took to reach the runner's code (every result of
    a pod says it, so that the pod's start-up survives whichever of them the collector reads)."""
    if seconds is None or not isinstance(result, OkResult) or result.timings is None:
        return result
    timings = result.timings.model_copy(update={"process_s": seconds})
    return result.model_copy(update={"timings": timings})


def _on_sigterm(signum: int, frame: object) -> None:
    raise Terminated(
        "SIGTERM: the pod is being deleted (preemption, eviction, the Job's deadline or a "
        "node drain) before the variant finished"
    )


def main(argv: list[str] | None = None) -> int:
    """Run this pod's variants and return the process's exit code: the most severe of their
    classes (contract.errors.most_severe)."""
    logging.basicConfig(
        stream=sys.stderr, level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s"
    )
    process_s = since_start()
    args = _arguments(argv)
    config: RunConfig | None = None
    results: list[BenchResult] = []
    codes: list[ExitCode] = []
    current: VariantConfig | None = None
    scratch: Path | None = None
    progress.report_to(sys.stderr)
    try:
        config = _read_config(args.config)
        index = _index(args.index)
        group = pick_group(config, index)
        lake = ResultLake.from_env(os.environ, config.workflow)
        scratch = Path(tempfile.mkdtemp(prefix="benchfleet-"))
        keep_caches_in(scratch)
        paths = RunPaths(args.models, scratch, args.ca)
        programs = Programs(args.models, scratch, args.ca, args.oci_models, args.image_root)
        references = References()
        for planned in runs(group, config.interleave):
            unit = _not_reported(planned, args.reported, index)
            if not unit:
                continue
            current = unit[0]
            outcomes = (
                _run(config, unit[0], paths, programs, references)
                if len(unit) == 1
                else _run_interleaved(config, unit, programs, references)
            )
            current = None  # its results are in hand: a SIGTERM from here on is the group's
            for result, code in outcomes:
                timed = _with_process_time(result, process_s)
                results.append(lake.store(timed) if lake else timed)
                codes.append(code)
                emit(results, sys.stdout, args.termination_log)
        return int(most_severe(codes))
    except (RunnerError, Terminated) as error:
        # The group as a whole: config.json or the index is bad, or SIGTERM ends the pod
        # (during `current`, whose result is this one; the rest of the group never ran).
        log.error("%s: %s", error.error_type, error)
        results.append(_failure(error, config, current))
        codes.append(error.exit_code)
    except Exception as error:
        log.exception("internal error")
        internal = RunnerError(f"{type(error).__name__}: {error}")
        results.append(_failure(internal, config, current))
        codes.append(internal.exit_code)
    finally:
        # Downloads and compile caches: gigabytes a local run would otherwise leave in /tmp.
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)
        # main() called in-process (tests) leaves no stream behind for later callers.
        progress.report_to(None)
    emit(results, sys.stdout, args.termination_log)
    return int(most_severe(codes))


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
