"""Structured logs: one JSON object per line on stderr, for a log pipeline to index.

Context rides on `extra=`: `log.info("job finished", extra=job_context(...))` gives the line
`job_id`, `namespace`, `gpu_type` and `workflow_id` fields as well as the message.
"""

import json
import logging
import sys
from datetime import UTC, datetime
from typing import Final, Literal

CONTEXT_FIELDS: Final = ("workflow_id", "job_id", "namespace", "gpu_type", "cluster", "index")

LogFormat = Literal["text", "json"]


def job_context(
    workflow_id: str, job_id: str, namespace: str, gpu_type: str | None, cluster: str
) -> dict[str, object]:
    """The fields every line about one Job carries."""
    return {
        "workflow_id": workflow_id,
        "job_id": job_id,
        "namespace": namespace,
        "gpu_type": gpu_type,
        "cluster": cluster,
    }


class JsonFormatter(logging.Formatter):
    """Formats a record as a JSON object with its context fields."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, object] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        for field in CONTEXT_FIELDS:
            if field in record.__dict__:
                line[field] = record.__dict__[field]
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return json.dumps(line, sort_keys=True, default=str)


def configure(log_format: LogFormat, verbose: bool) -> None:
    """Send the collector's logs to stderr, as text for people or JSON for machines."""
    handler = logging.StreamHandler(sys.stderr)
    if log_format == "json":
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(logging.Formatter("%(levelname)s %(message)s"))
    root = logging.getLogger("collector")
    root.handlers[:] = [handler]
    root.setLevel(logging.DEBUG if verbose else logging.INFO)
    root.propagate = False
