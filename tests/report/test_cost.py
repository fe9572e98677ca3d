"""Each variant's cost in the report: the device time its pods held (what gather recorded),
priced where specs/clusters.yaml says, and what 1,000 inferences cost at its speed."""

import csv
import io
import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from benchfleet.collector import cli
from benchfleet.prices import read_prices
from contract.allocation import Allocation, Capacity
from contract.layout import FLEET_FILE, LOCAL_CLUSTER
from contract.options import DEFAULT_DATABASE
from contract.pricing import PriceList, Pricing
from contract.records import JobIdentity, JobRecord, StoredVariant, write_record
from contract.result import ENERGY_ON_CPU, Energy, GpuTelemetry, OkResult
from contract.variant import Runtime, VariantRef
from report.cost import NOT_RECORDED, Costs, costs
from report.csv import to_csv
from report.html import to_html
from report.json import to_json
from report.model import build_report
from report.text import to_text
from store.database import StoredRun, open_store
from tests.collector.stored import JOB, NOW, failed, succeeded
from tests.conftest import TEST_DATA, commit, git

PRICES = PriceList(
    currency="USD",
    per_hour={
        "us-east": {
            "nvidia-a100": {"on-demand": 3.6, "spot": 1.2},
            "nvidia-v100": {"on-demand": 3.0},
            "nvidia-t4": {"on-demand": 0.36},
        }
    },
)


def allocation(
    seconds: float,
    *,
    devices: float = 1,
    device_type: str = "nvidia-a100",
    capacity: Capacity = "on-demand",
    estimate: tuple[str, ...] = (),
) -> Allocation:
    return Allocation(
        seconds=seconds,
        pod_seconds=seconds,
        share=1,
        devices=devices,
        unit="cpu" if device_type == "cpu" else "gpu",
        device_type=device_type,
        capacity=capacity,
        attempts=1,
        estimate=estimate,
    )


def run(
    target: str,
    p50_ms: float,
    held: Allocation | None,
    *,
    cluster: str = "us-east",
    repeat: int | None = None,
    variant: StoredVariant | None = None,
) -> StoredRun:
    """A run of tiny-mlp at batch 4 on `target` (p50 per sample: p50_ms / 4) that held
    `held` of its node."""
    stored = variant or succeeded(0, p50_ms=p50_ms)
    name = f"cpu-smoke-{target}" + ("" if repeat is None else f"-r{repeat}")
    return StoredRun(
        job=JOB.model_copy(
            update={"target": target, "job": name, "cluster": cluster, "repeat": repeat}
        ),
        variant=stored.model_copy(update={"allocation": held}),
        collected_at="2026-12-03T06:00:00Z",
    )


def cost_of(runs: list[StoredRun], prices: PriceList | None = PRICES) -> Costs:
    return costs(build_report(runs, prices=Pricing(prices)))


@pytest.mark.parametrize(
    ("capacity", "cost", "per_1000"),
    [
        # 2 GPUs x 100 s at 3.60 an hour; 1,000 inferences at 2 ms a sample on 2 GPUs: 4 s.
        ("on-demand", 0.2, 0.004),
        ("spot", 200 * 1.2 / 3600, 4 * 1.2 / 3600),
    ],
)
def test_a_variant_costs_its_device_seconds_at_the_price_of_what_it_ran_on(
    capacity: Capacity, cost: float, per_1000: float
) -> None:
    found = cost_of([run("a100", 8.0, allocation(100, devices=2, capacity=capacity))])
    (variant,) = found.variants
    assert (variant.device_seconds, variant.device_seconds_per_1000) == (200, 4)
    assert variant.cost == pytest.approx(cost)
    assert variant.cost_per_1000 == pytest.approx(per_1000)
    assert (variant.estimate, variant.unpriced) == ((), None)
    (target,) = found.targets
    assert (target.device_seconds, target.cost) == (200, variant.cost)


@pytest.mark.parametrize(
    ("held", "prices", "why"),
    [
        (allocation(10), None, "no prices in specs/clusters.yaml"),
        (
            allocation(10, device_type="nvidia-t4", capacity="spot"),
            PRICES,
            "specs/clusters.yaml gives no spot price for nvidia-t4 in us-east",
        ),
        (
            allocation(10).model_copy(update={"device_type": None, "capacity": None}),
            PRICES,
            "its Job does not say its device type and capacity",
        ),
        (None, PRICES, NOT_RECORDED),
    ],
)
def test_a_variant_without_a_price_says_why_and_keeps_its_device_seconds(
    held: Allocation | None, prices: PriceList | None, why: str
) -> None:
    (variant,) = cost_of([run("a100", 4.0, held)], prices).variants
    assert variant.cost is None and variant.cost_per_1000 is None
    assert variant.unpriced is not None and why in variant.unpriced
    assert variant.device_seconds == (10 if held else None)


def test_a_local_run_is_never_priced() -> None:
    (variant,) = cost_of([run("a100", 4.0, allocation(10), cluster=LOCAL_CLUSTER)]).variants
    assert variant.cost is None
    assert variant.unpriced == "a local run holds no cluster's node: not priced"


def test_a_failed_variants_time_counts_in_its_targets_cost() -> None:
    runs = [
        run("a100", 4.0, allocation(100)),
        run("a100", 0, allocation(20, estimate=("an end never seen",)), variant=failed(1)),
    ]
    found = cost_of(runs)
    measured, failure = found.variants
    assert (measured.measured, failure.measured) == (True, False)
    assert failure.cost == pytest.approx(0.02) and failure.cost_per_1000 is None
    (target,) = found.targets
    assert (target.device_seconds, target.estimated, target.unrecorded) == (120, 1, 0)
    assert target.cost == pytest.approx(0.12)
    text = to_text(build_report(runs, prices=Pricing(PRICES)))
    assert "failed; an end never seen" in text
    assert (
        "Held: 120.0 GPU-s, USD 0.1200, priced by the checkout's specs/clusters.yaml; the time "
        "of 1 variant in part estimated."
    ) in text


def test_failed_variants_are_ordered_by_every_setting_compile_too() -> None:
    """The order was a hand-kept list of the settings that had missed compile: failures
    that differ in it alone stayed in index order, the inductor one first."""
    refs = [
        VariantRef(
            index=index,
            id=f"v{index}",
            model="tiny-mlp",
            precision="fp32",
            quantization="none",
            batch_size=4,
            runtime=how,
        )
        for index, how in enumerate((Runtime.INDUCTOR, Runtime.EAGER))
    ]
    failures = [failed(ref.index).model_copy(update={"variant": ref}) for ref in refs]
    runs = [run("a100", 0, allocation(10), variant=failure) for failure in failures]
    found = cost_of(runs).variants
    assert [(cost.index, cost.key and cost.key.runtime) for cost in found] == [
        (1, Runtime.EAGER),
        (0, Runtime.INDUCTOR),
    ]


def test_repeats_sum_their_runs_and_say_which_were_not_recorded() -> None:
    runs = [run("a100", 4.0, allocation(100), repeat=0), run("a100", 4.0, None, repeat=1)]
    (variant,) = cost_of(runs).variants
    assert (variant.runs, variant.recorded, variant.device_seconds) == (2, 1, 100)
    assert variant.estimate == (f"1 of its runs {NOT_RECORDED}",)


def test_the_front_holds_the_targets_no_other_is_both_faster_and_cheaper() -> None:
    """a100: 1 ms a sample at 3.60/h; v100 slower and dearer per inference (dominated); t4
    slowest and cheapest."""
    runs = [
        run("v100", 8.0, allocation(10, device_type="nvidia-v100")),
        run("a100", 4.0, allocation(10)),
        run("t4", 16.0, allocation(10, device_type="nvidia-t4")),
    ]
    points = cost_of(runs).points
    assert [(p.target, p.p50_per_sample_ms, p.on_front) for p in points] == [
        ("a100", 1.0, True),
        ("v100", 2.0, False),
        ("t4", 4.0, True),
    ]
    assert [p.cost_per_1000 for p in points] == pytest.approx([1 / 1000, 5 / 3000, 4e-4])


def test_the_report_gives_device_seconds_where_no_prices_are_given() -> None:
    runs = [run("a100", 4.0, allocation(100, devices=2)), run("cpu", 4.0, None)]
    report = build_report(runs)
    text = to_text(report)
    assert "Held: 200.0 GPU-s (no prices in specs/clusters.yaml: device-seconds only)." in text
    assert "device-s per 1,000 inferences" in text
    rows = {row["target"]: row for row in csv.DictReader(io.StringIO(to_csv(report)))}
    assert (rows["a100"]["device_seconds"], rows["a100"]["cost"]) == ("200.0", "")
    assert rows["cpu"]["device_seconds"] == ""
    assert "Speed against cost" not in to_html(report)


def test_every_format_prices_the_variants_and_the_page_plots_the_front() -> None:
    runs = [
        run("a100", 4.0, allocation(100)),
        run("t4", 16.0, allocation(10, device_type="nvidia-t4")),
    ]
    report = build_report(runs, prices=Pricing(PRICES))
    assert "Cost per target" in to_text(report)
    (row, _) = csv.DictReader(io.StringIO(to_csv(report)))
    assert (row["target"], row["currency"], float(row["cost"])) == ("a100", "USD", 0.1)
    assert json.loads(to_json(report))["costs"]["currency"] == "USD"
    assert "Speed against cost, per model" in to_html(report)


def test_no_allocation_recorded_shows_no_cost_tables() -> None:
    text = to_text(build_report([run("a100", 4.0, None)], prices=Pricing(PRICES)))
    assert "Cost per" not in text and "Held:" not in text


FLEET_PRICES = """
prices:
  currency: EUR
  per_hour:
    nvidia-a100: {on_demand: 3.5, spot: 1.0}
    cpu: {on_demand: 0.04}
"""


def fleet_with(root: Path, table: str, *, replace: bool = False) -> None:
    (root / "specs").mkdir(exist_ok=replace)
    text = (TEST_DATA / FLEET_FILE).read_text(encoding="utf-8")
    beta = '    kubernetes_version: "1.36"'
    text = text.replace(
        beta,
        f"{beta}\n    prices:\n      currency: EUR\n      per_hour:\n"
        "        nvidia-h100: {on_demand: 5.0}\n        nvidia-a100: {on_demand: 4.0}",
    )
    (root / FLEET_FILE).write_text(text + table, encoding="utf-8")


def test_the_price_list_is_the_fleets_with_each_clusters_own_entries_over_it(
    tmp_path: Path,
) -> None:
    fleet_with(tmp_path, FLEET_PRICES)
    prices = read_prices(tmp_path)
    assert prices is not None and prices.currency == "EUR"
    assert prices.per_hour == {
        "alpha": {
            "nvidia-a100": {"on-demand": 3.5, "spot": 1.0},
            "cpu": {"on-demand": 0.04},
        },
        "beta": {
            "nvidia-a100": {"on-demand": 4.0},
            "cpu": {"on-demand": 0.04},
            "nvidia-h100": {"on-demand": 5.0},
        },
    }


def test_a_fleet_without_prices_or_without_a_fleet_file_prices_nothing(tmp_path: Path) -> None:
    assert read_prices(tmp_path) is None
    (tmp_path / "specs").mkdir()
    shutil.copy(TEST_DATA / FLEET_FILE, tmp_path / FLEET_FILE)
    assert read_prices(tmp_path) is None


def report_cli(
    root: Path, targets: tuple[str, ...] = ("cpu",), output_format: str = "csv"
) -> tuple[int, str, str]:
    """The report, in `output_format`, on a run in cluster alpha of each of `targets` that
    held 4 CPUs for 30 s, and on the runs already stored and recorded."""
    with open_store(root / DEFAULT_DATABASE) as store:
        for target in targets:
            job, variant = cpu_run(target)
            store.add(job, [variant], NOW)
    done = CliRunner().invoke(
        cli, ["--root", str(root), "report", "--workflow", "cpu-smoke", "--format", output_format]
    )
    return done.exit_code, done.stdout, done.stderr


def test_the_report_command_prices_from_the_checkouts_fleet_file(tmp_path: Path) -> None:
    fleet_with(tmp_path, FLEET_PRICES)
    code, out, err = report_cli(tmp_path)
    assert code == 0, err
    (row,) = csv.DictReader(io.StringIO(out))
    # 4 CPUs x 30 s at 0.04 an hour.
    assert row["currency"] == "EUR"
    assert float(row["cost"]) == pytest.approx(120 * 0.04 / 3600)


def test_an_invalid_fleet_file_prices_nothing_and_says_where(tmp_path: Path) -> None:
    fleet_with(tmp_path, FLEET_PRICES.replace("EUR", "euro"))
    code, out, err = report_cli(tmp_path)
    assert code == 0, err
    assert "specs/clusters.yaml cannot be read, so the report prices nothing" in err
    assert "specs/clusters.yaml:28:13: prices.currency: 'euro' is not a currency code" in err
    (row,) = csv.DictReader(io.StringIO(out))
    assert (row["device_seconds"], row["cost"]) == ("120.0", "")


def cpu_run(target: str) -> tuple[JobIdentity, StoredVariant]:
    """A Job of its own in cluster alpha on `target`, whose run held 4 CPUs for 30 s."""
    held = allocation(30, device_type="cpu", devices=4)
    job = JOB.model_copy(update={"cluster": "alpha", "target": target, "job": f"smoke-{target}"})
    return job, succeeded(0).model_copy(update={"allocation": held})


def recorded(root: Path, target: str) -> None:
    job, variant = cpu_run(target)
    write_record(root, JobRecord(**job.model_dump(), outcome="complete", variants=(variant,)))


def test_each_job_is_priced_at_the_prices_when_it_ran_and_the_report_says_which(
    tmp_path: Path,
) -> None:
    """Old runs were priced at today's table without a word: each Job's runs are now priced
    at the fleet file its record's commit held, one not recorded yet at the checkout's."""
    git(tmp_path, "init", "-q")
    fleet_with(tmp_path, FLEET_PRICES)  # cpu at 0.04 an hour
    commit(tmp_path, "prices")
    first = git(tmp_path, "rev-parse", "HEAD").strip()
    recorded(tmp_path, "old")
    commit(tmp_path, "the old Job's record")
    (tmp_path / FLEET_FILE).write_text(
        (tmp_path / FLEET_FILE).read_text().replace("0.04", "0.08"), encoding="utf-8"
    )
    commit(tmp_path, "prices up")
    raised = git(tmp_path, "rev-parse", "HEAD").strip()
    recorded(tmp_path, "later")
    commit(tmp_path, "the later Job's record")
    (tmp_path / FLEET_FILE).write_text(
        (tmp_path / FLEET_FILE).read_text().replace("0.08", "0.12"), encoding="utf-8"
    )  # not committed: what the checkout prices a Job not recorded yet at
    code, out, err = report_cli(tmp_path, ("new",))
    assert code == 0, err
    rows = {row["target"]: row for row in csv.DictReader(io.StringIO(out))}
    # 4 CPUs x 30 s at each price an hour.
    assert {target: float(row["cost"]) * 3600 / 120 for target, row in rows.items()} == (
        pytest.approx({"old": 0.04, "later": 0.08, "new": 0.12})
    )
    assert {target: row["price_table"] for target, row in rows.items()} == {
        "old": first,
        "later": raised,
        "new": "checkout",
    }
    code, text, _ = report_cli(tmp_path, (), "text")
    (held,) = (line for line in text.splitlines() if line.startswith("Held:"))
    assert held.startswith(
        "Held: 360.0 CPU-s, EUR 0.008000, priced by the prices when each Job ran"
    )
    for version in (first, raised):
        assert f"specs/clusters.yaml at {version[:12]} for 1 variant, " in held
    assert held.endswith(", the checkout's specs/clusters.yaml for 1 variant.")
    code, out, _ = report_cli(tmp_path, (), "json")
    document = json.loads(out)
    assert {cost["target"]: cost["price_table"] for cost in document["costs"]["variants"]} == {
        "old": first,
        "later": raised,
        "new": "checkout",
    }
    assert document["prices"]["recorded"]["alpha"]["smoke-old"][0] == first


def test_an_older_fleet_file_that_does_not_validate_prices_its_jobs_nothing_and_says_where(
    tmp_path: Path,
) -> None:
    git(tmp_path, "init", "-q")
    fleet_with(tmp_path, FLEET_PRICES.replace("EUR", "euro"))
    commit(tmp_path, "a slip")
    broken = git(tmp_path, "rev-parse", "HEAD").strip()
    recorded(tmp_path, "old")
    commit(tmp_path, "the old Job's record")
    fleet_with(tmp_path, FLEET_PRICES, replace=True)
    commit(tmp_path, "the slip fixed")
    code, out, err = report_cli(tmp_path, ("new",))
    assert code == 0, err
    assert (
        f"warning: specs/clusters.yaml at {broken[:12]} cannot be read, so the runs it would "
        "price are not priced (device-seconds only):\nspecs/clusters.yaml:28:13: "
        "prices.currency: 'euro' is not a currency code"
    ) in err
    rows = {row["target"]: row for row in csv.DictReader(io.StringIO(out))}
    assert (rows["old"]["cost"], rows["old"]["device_seconds"]) == ("", "120.0")
    assert rows["old"]["not_priced"] == f"no prices in specs/clusters.yaml at {broken[:12]}"
    assert rows["new"]["price_table"] == "checkout"


def test_a_version_in_another_currency_prices_nothing() -> None:
    euros = PriceList("EUR", {"us-east": {"nvidia-a100": {"on-demand": 3.0}}})
    older = Pricing(PRICES, {"us-east": {"cpu-smoke-a100": ("1a2b3c4d5e6f7", euros)}})
    (variant,) = costs(build_report([run("a100", 4.0, allocation(10))], prices=older)).variants
    assert variant.cost is None and variant.price_table is None
    assert (
        variant.unpriced == "specs/clusters.yaml at 1a2b3c4d5e6f prices in EUR, the report in USD"
    )


def with_energy(target: str, energy: Energy | None, throttles: tuple[str, ...] = ()) -> StoredRun:
    measured = run(target, 4.0, None)
    result = measured.variant.result
    assert isinstance(result, OkResult)
    telemetry = GpuTelemetry(
        readings=10, interval_s=0.1, device_s=1, wall_s=1, throttle_reasons=list(throttles)
    )
    update = {"energy": energy, "gpu": telemetry if target != "cpu" else None}
    variant = measured.variant.model_copy(update={"result": result.model_copy(update=update)})
    return StoredRun(job=measured.job, variant=variant, collected_at=measured.collected_at)


ENERGY_FIGURES = ("joules", "joules_per_inference", "average_w")


def test_the_energy_table_gives_millijoules_and_watts_beside_the_throttle_reasons() -> None:
    runs = [
        with_energy(
            "a100",
            Energy(joules=12.0, joules_per_inference=0.006, average_w=240.0),
            ("sw_power_cap",),
        ),
        with_energy("t4", Energy(unavailable="NVML_ERROR_NOT_SUPPORTED: no energy counter")),
        with_energy("cpu", Energy(unavailable=ENERGY_ON_CPU)),
        # Issue #31: a counter that did not move, which runners before then reported as 0 J.
        with_energy("l4", Energy.model_validate(dict.fromkeys(ENERGY_FIGURES, 0.0))),
    ]
    report = build_report(runs)
    table = to_text(report).split("Energy\n------\n")[1].split("\n\n")[0].splitlines()
    assert [line.split()[1:2] + line.split()[7:10] for line in table[1:5]] == [
        ["a100", "6.000", "240.0", "sw_power_cap"],
        ["cpu", "-", "not", "available:"],
        ["l4", "-", "unknown:", "the"],
        ["t4", "-", "unknown:", "NVML_ERROR_NOT_SUPPORTED:"],
    ]
    assert "not available: a CPU target" in table[2]
    assert "unknown: the runner reported joules = 0.0: the energy counter did not move" in table[3]
    assert "unknown: NVML_ERROR_NOT_SUPPORTED: no energy counter" in table[4]
    rows = {row["target"]: row for row in csv.DictReader(io.StringIO(to_csv(report)))}
    assert (rows["a100"]["joules_per_inference"], rows["a100"]["average_w"]) == ("0.006", "240.0")
    assert rows["cpu"]["energy_unavailable"] == ENERGY_ON_CPU
    assert (rows["l4"]["joules_per_inference"], rows["l4"]["average_w"]) == ("", "")


def test_cpu_targets_alone_show_no_energy_table() -> None:
    runs = [with_energy("cpu", Energy(unavailable=ENERGY_ON_CPU)), run("a100", 4.0, None)]
    assert "Energy\n------" not in to_text(build_report(runs))
