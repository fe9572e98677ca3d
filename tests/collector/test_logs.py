"""JSON log lines carry the Job's context as fields a log pipeline can filter on."""

import json
import logging

from collector.logs import JsonFormatter, job_context


def test_a_json_line_carries_the_jobs_context() -> None:
    record = logging.LogRecord(
        "collector.gather", logging.INFO, __file__, 1, "job %s done", ("j",), None
    )
    record.__dict__.update(
        job_context("cpu-smoke", "cpu-smoke-cpu-1", "benchfleet-dev", "cpu", "us-east")
    )
    line = json.loads(JsonFormatter().format(record))
    assert line["message"] == "job j done"
    assert (line["workflow_id"], line["job_id"], line["namespace"], line["gpu_type"]) == (
        "cpu-smoke",
        "cpu-smoke-cpu-1",
        "benchfleet-dev",
        "cpu",
    )
    assert line["level"] == "info" and line["time"].endswith("+00:00")


def test_a_line_without_context_has_only_the_basic_fields() -> None:
    record = logging.LogRecord("collector", logging.WARNING, __file__, 1, "plain", (), None)
    assert set(json.loads(JsonFormatter().format(record))) == {"time", "level", "logger", "message"}
