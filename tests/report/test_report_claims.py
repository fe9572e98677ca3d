"""Issue 32's report defects on a 2-core CPU sweep: every cell says only what was measured and
what the spec asked (one-iteration intervals, advice, the speed-accuracy plot, memory within a
pod, unrelated models, placeholder images)."""

import csv
import dataclasses
import io
import json

import pytest
from matplotlib.figure import Figure

from contract.accuracy import Accuracy
from contract.allocation import Allocation
from contract.layout import LOCAL_CLUSTER
from contract.result import OkResult
from contract.samples import encode
from report import html
from report.csv import to_csv
from report.html import to_html
from report.json import to_json
from report.markdown import to_markdown
from report.model import build_report
from report.text import to_text
from report.verdict import run_verdict, verdict_lines
from store.database import StoredRun
from tests.report.test_report import MakeRun, make_run  # noqa: F401  (the fixture)
from tests.report.test_report_startup import MIB
from tests.report.test_report_startup import _run as sized_run


def _once(make_run: MakeRun, precision: str, ms: float) -> StoredRun:  # noqa: F811
    """A variant timed for one iteration: its median has no interval at all."""
    return make_run(model="bert", precision=precision, p50_ms=ms, samples=encode([round(ms * 1e6)]))


def test_a_one_iteration_ratio_prints_no_interval_in_every_format(
    make_run: MakeRun,  # noqa: F811
) -> None:
    report = build_report([_once(make_run, "fp32", 2.0), _once(make_run, "fp16", 1.0)])
    entry = report.axes[0].entries[0]
    assert not entry.ratio.bounded and entry.direction == "inconclusive"
    for text in (to_text(report), to_markdown(report), to_html(report)):
        assert "infx" not in text and "0.00x" not in text
        assert "no interval" in text
    text = to_json(report)
    assert "Infinity" not in text
    document = json.loads(text)
    ratio = document["axes"][0]["entries"][0]["ratio"]
    assert ratio["low"] is None and ratio["high"] is None and ratio["value"] == 0.5
    rows = list(csv.DictReader(io.StringIO(to_csv(report))))
    assert {row["ratio_to_best_low"] for row in rows} == {""}
    assert {row["ratio_to_best_high"] for row in rows} == {""}


def _with_cpus(run: StoredRun, requested: float, quota: float | None) -> StoredRun:
    """`run` on a CPU pod that requested `requested` CPUs under a cgroup quota of `quota`."""
    result = run.variant.result
    assert isinstance(result, OkResult) and result.environment is not None
    environment = result.environment.model_copy(update={"cpu_quota": quota})
    allocation = Allocation(seconds=60, pod_seconds=60, share=1, devices=requested, unit="cpu")
    variant = run.variant.model_copy(
        update={
            "result": result.model_copy(update={"environment": environment}),
            "allocation": allocation,
        }
    )
    return StoredRun(job=run.job, variant=variant, collected_at=run.collected_at)


@pytest.mark.parametrize("flag", ["contended", "cpu_throttled"])
def test_runs_that_had_guaranteed_cpus_are_not_advised_to_ask_for_them(
    make_run: MakeRun,  # noqa: F811
    flag: str,
) -> None:
    runs = [
        _with_cpus(make_run(target="cpu", precision=p, flags={flag: True}), 2, 2)
        for p in ("fp32", "bf16")
    ]
    advice = run_verdict(build_report(runs)).advice
    assert advice and not any("`resources: guaranteed` gives it" in line for line in advice)
    assert not any("or with `resources: guaranteed`" in line for line in advice)
    assert any("node_labels" in line and "although" in line for line in advice)
    assert all("although" in line for line in verdict_lines(run_verdict(build_report(runs)))[1:])


@pytest.mark.parametrize(("requested", "quota"), [(1, 2), (1.5, 1.5), (2, None)])
def test_runs_without_guaranteed_cpus_are_still_advised_to_ask_for_them(
    make_run: MakeRun,  # noqa: F811
    requested: float,
    quota: float | None,
) -> None:
    runs = [_with_cpus(make_run(target="cpu", flags={"contended": True}), requested, quota)]
    (advice,) = run_verdict(build_report(runs)).advice
    assert "`resources: guaranteed`" in advice and "although" not in advice


def _error(max_rel_error: float) -> Accuracy:
    return Accuracy(seed=0, cosine=1.0, max_rel_error=max_rel_error, top1_agreement=1.0)


def _drawn(runs: list[StoredRun]) -> tuple[dict[str, tuple[float, float]], list[str]]:
    """The speed-accuracy plot of `runs`' one sweep: each name drawn with its offset in
    points from its point, and the legend's entries."""
    (best,) = build_report(runs).best_configurations
    axes = Figure().subplots()
    html._tradeoff(axes, best.comparison)
    names = {text.get_text(): tuple(text.xyann) for text in axes.texts}  # type: ignore[attr-defined]
    legend = axes.get_legend()
    assert legend is not None
    return names, [entry.get_text() for entry in legend.get_texts()]


def test_a_best_the_noise_may_have_picked_is_marked_doubtful_on_the_plot(
    make_run: MakeRun,  # noqa: F811
) -> None:
    contended: dict[str, object] = {"contended": True}
    runs = [
        make_run(precision="fp32", p50_ms=2.0, accuracy=_error(0.0), index=0),
        make_run(precision="fp16", p50_ms=1.0, accuracy=_error(0.004), flags=contended, index=1),
    ]
    names, legend = _drawn(runs)
    assert "best?: fp16" in names and html.DOUBTFUL in legend
    clean = [runs[0], make_run(precision="fp16", p50_ms=1.0, accuracy=_error(0.004), index=1)]
    names, legend = _drawn(clean)
    assert "best: fp16" in names and html.DOUBTFUL not in legend


def test_names_that_would_overprint_are_set_apart_or_left_out(
    make_run: MakeRun,  # noqa: F811
) -> None:
    runs = [
        make_run(precision="fp32", p50_ms=2.0, accuracy=_error(0.0), index=0),
        make_run(precision="fp16", p50_ms=1.0, accuracy=_error(0.004), index=1),
        # On the front beside fp16: named a line lower.
        make_run(precision="bf16", p50_ms=0.99, accuracy=_error(0.0041), index=2),
        # Off the front beside fp16: not named.
        make_run(quantization="int8-dynamic", p50_ms=1.01, accuracy=_error(0.0042), index=3),
    ]
    names, _ = _drawn(runs)
    assert not any("int8" in name for name in names)
    offsets = {offset for name, offset in names.items() if "fp16" in name or "bf16" in name}
    assert len(offsets) == 2


def test_the_memory_table_says_what_each_variant_added_to_its_pods_high_water_mark() -> None:
    """Issue 32's BERT: one pod's peaks grew 1.1 to 2.2 GiB variant by variant."""
    gib = 1024 * MIB
    runs = [
        sized_run(0, "pod-a", model="bert", peak_rss=round(1.1 * gib)),
        sized_run(1, "pod-a", model="bert", peak_rss=round(1.6 * gib)),
        sized_run(2, "pod-a", model="bert", peak_rss=round(2.2 * gib)),
        sized_run(3, "pod-b", model="bert", peak_rss=round(1.0 * gib)),
    ]
    report = build_report(runs)
    (startup,) = report.startup
    (bert,) = startup.memory
    assert bert.after_others == 2
    assert bert.max_added_bytes == round(1.1 * gib)
    # Added: 1.1, 0.5 and 0.6 GiB in pod a, 1.0 in pod b.
    assert bert.median_added_bytes == pytest.approx(0.8 * gib, rel=1e-3)
    text = to_text(report)
    assert "high-water mark" in text and "added max" in text


def _provenance(report_text: str) -> str:
    return report_text.split("Provenance")[1]


def test_a_local_run_names_this_checkouts_runner_not_the_jobs_image(
    make_run: MakeRun,  # noqa: F811
) -> None:
    report = build_report([make_run(cluster="local")])
    provenance = _provenance(to_text(report))
    assert "this checkout's runner (localrun)" in provenance
    assert "registry.example.com" not in provenance
    (job,) = json.loads(to_json(report))["jobs"]
    assert job["runner"] == "this checkout's runner (localrun)"


@pytest.mark.parametrize(
    ("image", "placeholder"),
    [
        ("registry.example.com/benchfleet/runner@sha256:" + "4f0b8c3a" * 8, True),
        ("ghcr.io/acme/runner@sha256:" + "0" * 64, True),
        ("ghcr.io/acme/runner@sha256:" + "4f0b8c3a" * 8, False),
    ],
)
def test_a_placeholder_image_is_marked_with_how_to_set_the_real_one(
    make_run: MakeRun,  # noqa: F811
    image: str,
    placeholder: bool,
) -> None:
    run = make_run()
    run = dataclasses.replace(run, job=run.job.model_copy(update={"image": image}))
    report = build_report([run])
    hint = f"{image} (placeholder: `make pin-image` sets the real one)"
    assert (hint in _provenance(to_text(report))) is placeholder
    (job,) = json.loads(to_json(report))["jobs"]
    assert job["runner"] == (hint if placeholder else image)
    assert job["image"] == image


@pytest.mark.parametrize("flag", ["contended", "cpu_throttled"])
def test_a_contended_local_try_is_advised_a_node_not_a_spec_setting(
    make_run: MakeRun,  # noqa: F811
    flag: str,
) -> None:
    """A local try shares the workstation: `resources: guaranteed` (which its spec may have)
    changes nothing there."""
    runs = [
        make_run(cluster=LOCAL_CLUSTER, target="cpu", precision=p, flags={flag: True})
        for p in ("fp32", "bf16")
    ]
    (advice,) = run_verdict(build_report(runs)).advice
    assert "local try" in advice and "`resources: guaranteed`" not in advice
    # Where a cluster's run is flagged too, the cluster's advice stands.
    runs.append(make_run(target="cpu", precision="fp32", flags={flag: True}))
    assert "local try" not in run_verdict(build_report(runs)).advice[0]
