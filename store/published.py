"""A Job as `collector sync` publishes it to the lake: one JSON Lines file (gzip) that holds
all of it, and two Parquet files flattened for notebooks.

- `<job>.jsonl.gz`: the whole record, every variant with its samples. Line 1 is the header:
  the format's name and `schema_version`, the Job's record without its variants, the
  reuses the publishing store holds (`tried`), and `content_sha256`. Each further line is
  one variant run (`variant`, a StoredVariant) with when the publishing collector stored it
  (`collected_at`, null where only the record held the run). It is what `collector report
  --lake` reads back, into the same store and report as the publishing root's.
- `<job>.variants.parquet`: a row per variant, its settings and latency summary in columns,
  its whole result as JSON beside them; `<job>.samples.parquet`: a row per kept sample.
  The schema's name and version and the content digest are in each file's metadata.

`content_sha256` hashes what every collector of the Job stores alike (the header and the
variants, not `collected_at`, which is each collector's own clock): two collectors' copies of
one Job are the same run where it matches. Every output is byte-for-byte the same for the
same run (gzip without a time stamp, Parquet without one), so a re-run writes the same bytes.
"""

import gzip
import hashlib
import io
import json
import zlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

from pydantic import ValidationError

from contract.records import JobRecord, Reuses, StoredVariant
from contract.result import ErrorResult, LatencyStats, OkResult
from contract.variant import RUNTIME_KEY_CONTEXT, VariantSettings
from store.database import StoredRun

FORMAT: Final = "benchfleet.run"
"""The header's `schema`: what the file is."""
SCHEMA_VERSION: Final = 1
"""The published files' layout; a reader refuses a newer one, naming both."""
JSONL: Final = "jsonl.gz"
VARIANTS: Final = "variants.parquet"
SAMPLES: Final = "samples.parquet"
EXTENSIONS: Final = (VARIANTS, SAMPLES, JSONL)
"""Every file a Job is published as, in the order sync writes them: the JSON Lines file
last, since a Job is in the lake (for `report --lake`) once it is there."""
UNDATED: Final = "undated"
"""The date folder of a Job none of whose variants has a finish time, nor a schedule."""

MAX_JSONL_BYTES: Final = 1 << 30
"""A published JSON Lines file, inflated or not, at most: a Job of about 1,000 variants
each with the most samples a result keeps (65,536, about 0.9 MB of text with its summary),
ten times a 96-variant sweep's. Read whole, it is held in memory: past this, a reader says
so rather than taking the machine's memory (a record alone may be 64 MiB)."""
_META_SCHEMA: Final = b"benchfleet.schema"
_META_VERSION: Final = b"benchfleet.schema_version"
_META_DIGEST: Final = b"benchfleet.content_sha256"


class PublishedError(ValueError):
    """A published file that cannot be read back; the message names the file and why."""


@dataclass(frozen=True)
class PublishedRun:
    """One Job as published: its record with every variant (samples too), when the
    publishing store stored each, and the earlier runs the store says it reuses."""

    record: JobRecord
    collected_at: Mapping[int, str | None]
    """Index -> the publishing collector's time of storing it; None where only the record
    in results/ held the run."""
    tried: Reuses

    @property
    def date(self) -> str:
        """The date folder: the day its last variant finished (UTC), else the day its
        scheduled run was for, else UNDATED. The Job's own, so every collector publishes it
        under the same key."""
        finished = [v.finished_at for v in self.record.variants if v.finished_at is not None]
        moment = max(finished) if finished else self.record.scheduled_at
        return f"{moment:%Y-%m-%d}" if moment is not None else UNDATED


def published_run(record: JobRecord, stored: Iterable[StoredRun], tried: Reuses) -> PublishedRun:
    """The Job of `record` as a store holds it: each variant the store's copy (with the
    samples the store read), the record's where the store has none, as a report merges
    them (store.history.merged)."""
    held = {run.variant.index: run for run in stored}
    recorded = {variant.index: variant for variant in record.variants}
    indexes = sorted(recorded.keys() | held.keys())
    variants = tuple(held[i].variant if i in held else recorded[i] for i in indexes)
    return PublishedRun(
        record=record.model_copy(update={"variants": variants}),
        collected_at={i: held[i].collected_at if i in held else None for i in indexes},
        tried={job: tuple(ids) for job, ids in sorted(tried.items())},
    )


def _variant_text(variant: StoredVariant) -> str:
    return variant.model_dump_json(exclude_none=True, context=RUNTIME_KEY_CONTEXT)


def _header(run: PublishedRun) -> dict[str, Any]:
    job = run.record.model_dump(
        mode="json", exclude={"variants"}, exclude_none=True, context=RUNTIME_KEY_CONTEXT
    )
    return {"job": job, "tried": {k: list(v) for k, v in run.tried.items()}}


def _digest(header: Mapping[str, Any], variants: Sequence[str]) -> str:
    text = "\n".join([json.dumps(header, sort_keys=True, separators=(",", ":")), *variants])
    return hashlib.sha256(text.encode()).hexdigest()


def content_sha256(run: PublishedRun) -> str:
    """What every collector's copy of the Job shares, hashed (not `collected_at`)."""
    return _digest(_header(run), [_variant_text(v) for v in run.record.variants])


def jsonl_bytes(run: PublishedRun) -> bytes:
    """The JSON Lines file, gzipped without a time stamp."""
    variants = [_variant_text(v) for v in run.record.variants]
    header = _header(run)
    first = {
        "schema": FORMAT,
        "schema_version": SCHEMA_VERSION,
        "content_sha256": _digest(header, variants),
        **header,
    }
    lines = [json.dumps(first, sort_keys=True, separators=(",", ":"))]
    lines += [
        f'{{"collected_at":{json.dumps(run.collected_at.get(v.index))},"variant":{text}}}'
        for v, text in zip(run.record.variants, variants, strict=True)
    ]
    return gzip.compress(("\n".join(lines) + "\n").encode(), mtime=0)


def _inflated(data: bytes, where: str) -> bytes:
    inflate = zlib.decompressobj(wbits=31)
    try:
        text = inflate.decompress(data, MAX_JSONL_BYTES)
    except zlib.error as error:
        raise PublishedError(f"{where}: not gzip: {error}") from None
    if inflate.unconsumed_tail:
        raise PublishedError(f"{where}: inflates beyond {MAX_JSONL_BYTES:,} bytes")
    if not inflate.eof:
        raise PublishedError(f"{where}: cut off (the gzip stream does not end)")
    return text


def _schema_problem(name: object, version: object) -> str | None:
    if name != FORMAT:
        return f"its schema is {str(name)[:60]!r}, not {FORMAT!r}"
    if not isinstance(version, int) or isinstance(version, bool):
        return f"its schema_version {str(version)[:20]!r} is not a number"
    if version > SCHEMA_VERSION:
        return (
            f"schema_version {version} is newer than the {SCHEMA_VERSION} this collector "
            "reads: use a newer collector"
        )
    return None


def read_jsonl(data: bytes, where: str) -> PublishedRun:
    """A published JSON Lines file read back, its content digest checked; PublishedError
    naming `where` (its key), the line and the field where it is not one."""
    lines = _inflated(data, where).decode("utf-8", errors="replace").splitlines()
    if not lines:
        raise PublishedError(f"{where}: empty")
    try:
        header = json.loads(lines[0])
        entries = [json.loads(line) for line in lines[1:]]
    except json.JSONDecodeError as error:
        raise PublishedError(f"{where}: line {error.lineno}: not JSON: {error.msg}") from None
    if not isinstance(header, dict):
        raise PublishedError(f"{where}: line 1 is no header object")
    problem = _schema_problem(header.get("schema"), header.get("schema_version"))
    if problem is not None:
        raise PublishedError(f"{where}: {problem}")
    variants: list[StoredVariant] = []
    collected: dict[int, str | None] = {}
    for number, entry in enumerate(entries, start=2):
        try:
            if not isinstance(entry, dict):
                raise ValueError("a variant line is an object")
            variant = StoredVariant.model_validate(entry.get("variant"))
            at = entry.get("collected_at")
            if at is not None and not _stored_time(at):
                raise ValueError(f"collected_at {str(at)[:40]!r} is no time as a store keeps one")
        except (ValidationError, ValueError) as error:
            raise PublishedError(f"{where}: line {number}: {_first(error)}") from None
        variants.append(variant)
        collected[variant.index] = at
    try:
        record = JobRecord.model_validate({**header.get("job", {}), "variants": variants})
        tried = {str(k): tuple(map(str, v)) for k, v in dict(header.get("tried", {})).items()}
    except (ValidationError, ValueError, TypeError) as error:
        raise PublishedError(f"{where}: line 1: {_first(error)}") from None
    run = PublishedRun(record=record, collected_at=collected, tried=tried)
    found = content_sha256(run)
    if header.get("content_sha256") != found:
        raise PublishedError(
            f"{where}: its content hashes to {found}, not the {header.get('content_sha256')!r} "
            "its header says: altered or cut after it was written"
        )
    return run


def _stored_time(text: object) -> bool:
    """Whether `text` is a time as Store.add writes one (ISO 8601 to the second), which a
    store given it back writes the same."""
    try:
        return (
            isinstance(text, str) and datetime.fromisoformat(text).isoformat("T", "seconds") == text
        )
    except ValueError:
        return False


def _first(error: Exception) -> str:
    if isinstance(error, ValidationError):
        detail = error.errors()[0]
        return f"{'.'.join(map(str, detail['loc']))}: {detail['msg']}"
    return str(error).splitlines()[0] if str(error) else type(error).__name__


_LATENCY: Final = [name for name in LatencyStats.model_fields if name != "p50_interval"]
_SETTINGS: Final = list(VariantSettings.model_fields)


def _variant_row(run: PublishedRun, variant: StoredVariant) -> dict[str, Any]:
    record = run.record
    result = variant.result
    ref = variant.variant or (result.variant if result else None)
    ok = result if isinstance(result, OkResult) else None
    interval = ok.latency.p50_interval if ok else None
    return {
        "namespace": record.namespace,
        "job": record.job,
        "target": record.target,
        "repeat": record.repeat,
        "scheduled_run": record.scheduled_run,
        "outcome": record.outcome,
        "index": variant.index,
        "state": variant.state,
        "reason": variant.reason,
        "explanation": variant.explanation,
        "pod": variant.pod,
        "node": variant.node,
        "attempts": variant.attempts,
        "preemptions": variant.preemptions,
        "finished_at": variant.finished_at,
        "collected_at": run.collected_at.get(variant.index),
        "variant_id": ref.id if ref else None,
        **{name: _plain(getattr(ref, name)) if ref else None for name in _SETTINGS},
        "accuracy_failed": variant.accuracy_failed,
        **{f"latency_{name}": getattr(ok.latency, name) if ok else None for name in _LATENCY},
        "p50_low_ms": interval.low_ms if interval else None,
        "p50_high_ms": interval.high_ms if interval else None,
        "throughput_samples_per_s": ok.throughput_samples_per_s if ok else None,
        "error_type": result.error.type if isinstance(result, ErrorResult) else None,
        "result_json": result.model_dump_json(exclude_none=True, context=RUNTIME_KEY_CONTEXT)
        if result
        else None,
    }


def _plain(value: object) -> object:
    """A setting's value as a column holds it: an enum's value, a number or a name."""
    return getattr(value, "value", value)


def _parquet(table: Any, kind: str, digest: str) -> bytes:
    import pyarrow.parquet as pq  # noqa: PLC0415 - only sync and notebooks need pyarrow

    table = table.replace_schema_metadata(
        {
            _META_SCHEMA: f"{FORMAT}.{kind}".encode(),
            _META_VERSION: str(SCHEMA_VERSION).encode(),
            _META_DIGEST: digest.encode(),
        }
    )
    sink = io.BytesIO()
    pq.write_table(table, sink, compression="zstd")
    return sink.getvalue()


def variants_parquet(run: PublishedRun) -> bytes:
    """The per-variant table: one row per variant run."""
    import pyarrow as pa  # noqa: PLC0415

    rows = [_variant_row(run, v) for v in run.record.variants]
    table = pa.Table.from_pylist(rows, schema=_variants_schema())
    return _parquet(table, "variants", content_sha256(run))


def _variants_schema() -> Any:
    import pyarrow as pa  # noqa: PLC0415

    text, integer, number = pa.string(), pa.int64(), pa.float64()
    settings = [
        (name, integer if VariantSettings.model_fields[name].annotation is int else text)
        for name in _SETTINGS
    ]
    return pa.schema(
        [
            ("namespace", text),
            ("job", text),
            ("target", text),
            ("repeat", integer),
            ("scheduled_run", integer),
            ("outcome", text),
            ("index", integer),
            ("state", text),
            ("reason", text),
            ("explanation", text),
            ("pod", text),
            ("node", text),
            ("attempts", integer),
            ("preemptions", integer),
            ("finished_at", pa.timestamp("ms", tz="UTC")),
            ("collected_at", text),
            ("variant_id", text),
            *settings,
            ("accuracy_failed", pa.bool_()),
            *(
                (
                    f"latency_{name}",
                    integer if LatencyStats.model_fields[name].annotation is int else number,
                )
                for name in _LATENCY
            ),
            ("p50_low_ms", number),
            ("p50_high_ms", number),
            ("throughput_samples_per_s", number),
            ("error_type", text),
            ("result_json", text),
        ]
    )


def samples_parquet(run: PublishedRun) -> bytes:
    """The samples table: one row per kept iteration of each variant with samples
    (`iteration` counts kept ones from 0; `stride` says how many ran per kept one)."""
    import pyarrow as pa  # noqa: PLC0415

    job: list[str] = []
    index: list[int] = []
    variant_id: list[str | None] = []
    iteration: list[int] = []
    stride: list[int] = []
    duration: list[int] = []
    for variant in run.record.variants:
        result = variant.result
        if not isinstance(result, OkResult) or result.samples is None:
            continue
        durations = result.samples.durations_ns()
        count = len(durations)
        job += [run.record.job] * count
        index += [variant.index] * count
        variant_id += [result.variant.id if result.variant else None] * count
        iteration += range(count)
        stride += [result.samples.stride] * count
        duration += durations
    table = pa.table(
        {
            "job": pa.array(job, pa.string()),
            "index": pa.array(index, pa.int64()),
            "variant_id": pa.array(variant_id, pa.string()),
            "iteration": pa.array(iteration, pa.int64()),
            "stride": pa.array(stride, pa.int64()),
            "duration_ns": pa.array(duration, pa.int64()),
        }
    )
    return _parquet(table, "samples", content_sha256(run))


def parquet_digest(data: bytes, where: str) -> str:
    """The content digest a published Parquet file's metadata names; PublishedError where
    the file is no published one this collector reads."""
    import pyarrow as pa  # noqa: PLC0415
    import pyarrow.parquet as pq  # noqa: PLC0415

    try:
        metadata = pq.read_schema(pa.BufferReader(data)).metadata or {}
    except (pa.ArrowException, OSError) as error:
        raise PublishedError(f"{where}: not Parquet: {error}") from None
    schema = metadata.get(_META_SCHEMA, b"").decode(errors="replace").rpartition(".")[0]
    version = metadata.get(_META_VERSION, b"").decode(errors="replace")
    problem = _schema_problem(schema, int(version) if version.isdigit() else version)
    if problem is not None:
        raise PublishedError(f"{where}: {problem}")
    return str(metadata.get(_META_DIGEST, b"").decode(errors="replace"))


def published_digest(data: bytes, ext: str, where: str) -> str:
    """The content digest of a published file of kind `ext`: a JSON Lines file's
    recomputed from its content, a Parquet file's as its metadata says."""
    if ext == JSONL:
        return content_sha256(read_jsonl(data, where))
    return parquet_digest(data, where)
