"""Every string of specs/clusters.yaml that lands in a manifest is checked against the rule
of the field it lands in, and every repeat in a list used as a set is an error at the
repeat: the API server refuses what breaks them, and Flux then stops applying the cluster."""

from pathlib import Path

import pytest

from contract.layout import FLEET_FILE
from synth.load import load_specs
from synth.main import synth
from synth.problems import SpecProblems
from tests.synth.conftest import problems_in

GIT = "  url: ssh://git@example.com/benchfleet"
ENVIRONMENTS = "environments: [dev, prod]"
ALPHA_SPOT = '      tolerations: [{key: spot, value: "true"}]'
BETA_DEVICES = "    device_types: [cpu, nvidia-a100, nvidia-h100]"


def problems_after(root: Path, old: str, new: str) -> list[str]:
    fleet = root / FLEET_FILE
    text = fleet.read_text(encoding="utf-8")
    assert old in text
    fleet.write_text(text.replace(old, new), encoding="utf-8")
    return [str(problem) for problem in problems_in(root)]


@pytest.mark.parametrize(
    ("old", "new", "where", "message"),
    [
        (GIT, f"{GIT}\n  interval: 5 minutes", "5:13: git.interval", "not a duration Flux"),
        (GIT, f"{GIT}\n  interval: 0s", "5:13: git.interval", "more than 0"),
        (GIT, f"{GIT}\n  interval: 1000h", "5:13: git.interval", "at most 30 days"),
        (GIT, f"{GIT}\n  interval: |\n    5m", "5:13: git.interval", "not a duration"),
        (GIT, f"{GIT}\n  branch: release candidate", "5:11: git.branch", "holds ' '"),
        (GIT, f"{GIT}\n  branch: feature..x", "5:11: git.branch", "holds '..'"),
        (GIT, f"{GIT}\n  branch: -main", "5:11: git.branch", "begins with '-'"),
        (GIT, f"{GIT}\n  branch: x/.hidden", "5:11: git.branch", "begins with '.'"),
        (GIT, f'{GIT}\n  branch: "main\\n"', "5:11: git.branch", "holds '\\n'"),
        (GIT, "  url: git@example.com:benchfleet", "4:8: git.url", "must begin with"),
        (GIT, '  url: "ssh://git@example.com/b\\n"', "4:8: git.url", "control characters"),
        (GIT, "  url: https://u:secret@example.com/b", "4:8: git.url", "carries a password"),
        (GIT, "  url: https:///benchfleet", "4:8: git.url", "has no valid host"),
        (GIT, "  url: ftp://u:secret@example.com/b", "4:8: git.url", "'ftp://***@example.com/b'"),
        (GIT, "  url: https://example.com:70000/b", "4:8: git.url", "port 70000 is no TCP"),
        (GIT, f"{GIT}\n  secret_name: Deploy Key", "5:16: git.secret_name", "DNS-label safe"),
        (
            "node_selector: {node-type: spot}",
            "node_selector: {node-type: Tesla T4}",
            "13:34: clusters[0].spot.node_selector.node-type",
            "node label value 'Tesla T4' is not a Kubernetes label value",
        ),
        (
            "node_selector: {node-type: spot}",
            "node_selector: {node type: spot}",
            "13:23: clusters[0].spot.node_selector['node type']",
            "node label key 'node type' is not a Kubernetes label key",
        ),
        (
            "node_selector: {node-type: spot}",
            'node_selector: {"node-type\\n": spot}',
            "13:23: clusters[0].spot.node_selector['node-type\\n']",
            "the key 'node-type\\n' holds U+000A LINE FEED",
        ),
        (
            "node_selector: {node-type: spot}",
            f"node_selector: {{node-type: {'x' * 64}}}",
            "13:34: clusters[0].spot.node_selector.node-type",
            "at most 63",
        ),
        (
            BETA_DEVICES,
            f"{BETA_DEVICES}\n    node_labels: "
            "{nvidia-a100: {nvidia.com/gpu.product: A100 80GB}}",
            "20:57: clusters[1].node_labels.nvidia-a100.nvidia.com/gpu.product",
            "'A100 80GB' is not a Kubernetes label value",
        ),
        (
            ALPHA_SPOT,
            '      tolerations: [{key: "spot\\n", value: "true"}]',
            "14:27: clusters[0].spot.tolerations[0].key",
            "toleration key 'spot\\n' is not a Kubernetes label key",
        ),
        (
            ALPHA_SPOT,
            "      tolerations: [{key: spot, value: yes please}]",
            "14:40: clusters[0].spot.tolerations[0].value",
            "toleration value 'yes please' is not a Kubernetes label value",
        ),
        (
            ALPHA_SPOT,
            "      tolerations: [{key: spot, value: x, effect: NoExec}]",
            "14:51: clusters[0].spot.tolerations[0].effect",
            "'NoExec' is not allowed here",
        ),
        ("region: test-1", 'region: "test-1\\n"', "9:13: clusters[0].region", "holds '\\n'"),
        ("region: test-1", "region: ' test-1'", "9:13: clusters[0].region", "spaces around it"),
        ("region: test-1", f"region: {'r' * 64}", "9:13: clusters[0].region", "at most 63"),
        (
            "api_server_cidrs: [10.0.0.1/32]",
            "api_server_cidrs: ['fe80::1%eth0/128']",
            "10:24: clusters[0].api_server_cidrs[0]",
            "names an IPv6 scope",
        ),
        (
            ENVIRONMENTS,
            f"{ENVIRONMENTS}\npriority_classes:\n  low: {{value: 1, description: ''}}",
            "8:32: priority_classes.low.description",
            "the description is blank",
        ),
        (
            ENVIRONMENTS,
            f"{ENVIRONMENTS}\npriority_classes:\n  low: {{value: 1, description: {'d' * 2001}}}",
            "8:32: priority_classes.low.description",
            "2,001 characters; at most 2,000",
        ),
        (
            "image: registry.example.com/benchfleet/runner@",
            f"image: registry.example.com/{'r' * 250}/runner@",
            "5:8: image",
            "the image's name (registry and path) is 278 characters; at most 255",
        ),
    ],
)
def test_a_fleet_value_that_would_break_its_manifest_is_refused_at_its_line(
    spec_repo: Path, old: str, new: str, where: str, message: str
) -> None:
    (problem,) = problems_after(spec_repo, old, new)
    assert problem.startswith(f"specs/clusters.yaml:{where}: ")
    assert message in problem


@pytest.mark.parametrize(
    ("old", "new", "problems"),
    [
        (
            ENVIRONMENTS,
            "environments: [dev, prod, dev]",
            ["6:27: environments[2]: environment 'dev' is already listed at environments[0]"],
        ),
        (
            BETA_DEVICES,
            "    device_types: [cpu, nvidia-a100, nvidia-h100, nvidia-a100, cpu]",
            [
                "19:51: clusters[1].device_types[3]: device type 'nvidia-a100' is already "
                "listed at device_types[1]",
                "19:64: clusters[1].device_types[4]: device type 'cpu' is already listed at "
                "device_types[0]",
            ],
        ),
        (
            "api_server_cidrs: [10.0.1.1/32]",
            "api_server_cidrs: [10.0.1.1/32, 10.0.2.0/24, 10.0.1.1/32]",
            [
                "18:50: clusters[1].api_server_cidrs[2]: '10.0.1.1/32' is the network of "
                "api_server_cidrs[0]"
            ],
        ),
        (
            "  - name: beta",
            "  - name: alpha",
            ["16:11: clusters[1].name: cluster name 'alpha' is already used by clusters[0]"],
        ),
        (
            ALPHA_SPOT,
            '      tolerations: [{key: spot, value: "true"}, '
            '{key: spot, operator: Equal, value: "true", effect: NoSchedule}]',
            ["14:49: clusters[0].spot.tolerations[1]: this toleration repeats "
             "spot.tolerations[0]"],
        ),
    ],
)  # fmt: skip
def test_each_repeat_in_a_fleet_list_is_an_error_at_the_repeat(
    spec_repo: Path, old: str, new: str, problems: list[str]
) -> None:
    found = problems_after(spec_repo, old, new)
    assert [problem.split("\n")[0] for problem in found] == [
        f"specs/clusters.yaml:{problem}" for problem in problems
    ]


def test_an_environment_listed_twice_stops_synth_before_cdk8s(spec_repo: Path) -> None:
    """It used to end in a JSII traceback from cdk8s (two constructs of one id)."""
    fleet = spec_repo / FLEET_FILE
    text = fleet.read_text(encoding="utf-8").replace(ENVIRONMENTS, "environments: [dev, dev]")
    fleet.write_text(text, encoding="utf-8")
    with pytest.raises(SpecProblems):
        synth(spec_repo)
    assert not (spec_repo / "dist").exists()


@pytest.mark.parametrize(
    ("old", "new", "problem"),
    [
        (
            BETA_DEVICES,
            f"{BETA_DEVICES}\n    node_labels: {{nvidia-a100: {{}}}}",
            "20:19: clusters[1].node_labels.nvidia-a100: the mapping is empty",
        ),
        (
            BETA_DEVICES,
            f"{BETA_DEVICES}\n    node_labels:\n      nvidia-a100: {{pool: gpu}}\n"
            "      nvidia-h100: {pool: gpu}",
            "22:7: clusters[1].node_labels.nvidia-h100: nvidia-h100 and nvidia-a100 nodes are "
            "selected by the same labels, so a pod meant for one could run on the other",
        ),
        (
            BETA_DEVICES,
            f"{BETA_DEVICES}\n    node_labels: {{nvidia-h100: {{gpu-type: nvidia-a100}}}}",
            "20:19: clusters[1].node_labels.nvidia-h100: nvidia-h100 and nvidia-a100 nodes are "
            "selected by the same labels, so a pod meant for one could run on the other",
        ),
        (
            "node_selector: {node-type: spot}",
            "node_selector: {gpu-type: spot}",
            "13:33: clusters[0].spot.node_selector.gpu-type: gpu-type also selects nvidia-t4, "
            "nvidia-v100, nvidia-a100 nodes (gpu-type: nvidia-t4, nvidia-v100, nvidia-a100): a "
            "spot pod would ask for gpu-type: spot instead, on any device's spot nodes",
        ),
        (
            ALPHA_SPOT,
            "      tolerations: []",
            "14:7: clusters[0].spot.tolerations: the list is empty",
        ),
        (GIT, f"{GIT}\n  secret_name:", "5:15: git.secret_name: no value is given"),
    ],
)
def test_a_fleet_entry_that_selects_nothing_or_the_wrong_nodes_is_refused(
    spec_repo: Path, old: str, new: str, problem: str
) -> None:
    (found,) = problems_after(spec_repo, old, new)
    assert found.split("\n")[0] == f"specs/clusters.yaml:{problem}"


BETA_VERSION = '    kubernetes_version: "1.36"'


@pytest.mark.parametrize(
    ("written", "message"),
    [
        ("1.35", "Input should be a valid string"),
        ('"1.3"', "Kubernetes 1.3 is older than 1.33"),
        ('"1.32"', "Kubernetes 1.32 is older than 1.33"),
        ('"v1.35"', "'v1.35' is not a Kubernetes version"),
        ('"1.35.2"', "'1.35.2' is not a Kubernetes version"),
        ('"1.035"', "'1.035' is not a Kubernetes version"),
        ('"1.35\\n"', "'1.35\\n' is not a Kubernetes version"),
    ],
)
def test_a_kubernetes_version_is_quoted_major_minor_and_supported(
    spec_repo: Path, written: str, message: str
) -> None:
    """Unquoted, YAML reads 1.30 as the number 1.3; a cluster older than the manifests
    assume would refuse them."""
    (problem,) = problems_after(spec_repo, BETA_VERSION, f"    kubernetes_version: {written}")
    assert problem.startswith("specs/clusters.yaml:20:25: clusters[1].kubernetes_version: ")
    assert message in problem


PRICES = "prices:\n  currency: USD\n  per_hour:\n    nvidia-a100: {on_demand: 3.67, spot: 1.10}"
"""A fleet-wide price table, appended after the clusters (line 21 on)."""
BETA_PRICES = f"{BETA_VERSION}\n    prices:\n      currency: USD\n      per_hour:"


def with_prices(root: Path, table: str, beta: str | None = None) -> None:
    """The test fleet with `table` after its clusters, and cluster beta's own entries."""
    fleet = root / FLEET_FILE
    text = fleet.read_text(encoding="utf-8")
    if beta is not None:
        text = text.replace(BETA_VERSION, f"{BETA_PRICES}\n{beta}")
    fleet.write_text(text + table + "\n", encoding="utf-8")


def first_lines(root: Path) -> list[str]:
    return [str(problem).split("\n")[0] for problem in problems_in(root)]


def test_a_price_table_is_optional_and_read_with_the_fleet(spec_repo: Path) -> None:
    with_prices(spec_repo, PRICES, "        nvidia-h100: {on_demand: 4.1}")
    fleet = load_specs(spec_repo).fleet
    beta = fleet.prices_in("beta")
    assert beta is not None and beta.currency == "USD"
    assert {device: price.per_hour("on-demand") for device, price in beta.per_hour.items()} == {
        "nvidia-a100": 3.67,
        "nvidia-h100": 4.1,
    }
    assert fleet.prices_in("alpha") == fleet.prices
    assert fleet.prices_in("elsewhere") is None


@pytest.mark.parametrize(
    ("table", "problem"),
    [
        (PRICES.replace("USD", "usd"), "22:13: prices.currency: 'usd' is not a currency code"),
        (
            PRICES.replace("USD", "dollars"),
            "22:13: prices.currency: 'dollars' is not a currency code",
        ),
        (
            PRICES.replace("3.67", "-1"),
            "24:30: prices.per_hour.nvidia-a100.on_demand: Input should be greater than or "
            "equal to 0 (got -1)",
        ),
        (
            PRICES.replace("3.67", "1e7"),
            "24:30: prices.per_hour.nvidia-a100.on_demand: Input should be less than or "
            "equal to 1000000 (got 10000000.0)",
        ),
        (
            PRICES.replace("3.67", ".inf"),
            "24:30: prices.per_hour.nvidia-a100.on_demand: '.inf' is not a finite number",
        ),
        (
            PRICES.replace("3.67", '"3.67"'),
            "24:30: prices.per_hour.nvidia-a100.on_demand: Input should be a valid number",
        ),
        (
            PRICES.replace("{on_demand: 3.67, spot: 1.10}", "{}"),
            "24:5: prices.per_hour.nvidia-a100: a device's entry names no price",
        ),
        (
            PRICES.replace("nvidia-a100", "nvidia-a1000"),
            "24:5: prices.per_hour.nvidia-a1000: unknown device type 'nvidia-a1000'",
        ),
        (
            PRICES.replace("nvidia-a100", "nvidia-l4"),
            "24:5: prices.per_hour.nvidia-l4: a price for nvidia-l4, which no cluster has "
            "nvidia-l4 nodes",
        ),
        (
            "prices:\n  currency: USD\n  per_hour: {}",
            "23:3: prices.per_hour: the mapping is empty",
        ),
    ],
)
def test_a_price_the_report_could_not_use_is_refused_at_its_line(
    spec_repo: Path, table: str, problem: str
) -> None:
    with_prices(spec_repo, table)
    (found,) = first_lines(spec_repo)
    assert found.startswith(f"specs/clusters.yaml:{problem}")


@pytest.mark.parametrize(
    ("entries", "problem"),
    [
        (
            "        nvidia-t4: {on_demand: 0.35}",
            "24:9: clusters[1].prices.per_hour.nvidia-t4: a price for nvidia-t4, which the "
            "cluster has no nvidia-t4 nodes",
        ),
        (
            "        nvidia-h100: {on_demand: 4.1, spot: 2.0}",
            "24:45: clusters[1].prices.per_hour.nvidia-h100.spot: a spot price, but no cluster "
            "it applies to has spot nodes",
        ),
    ],
)
def test_a_clusters_own_prices_are_for_its_own_nodes(
    spec_repo: Path, entries: str, problem: str
) -> None:
    with_prices(spec_repo, "", entries)
    assert first_lines(spec_repo) == [f"specs/clusters.yaml:{problem}"]


def test_every_price_table_is_in_one_currency(spec_repo: Path) -> None:
    with_prices(spec_repo, PRICES, "        cpu: {on_demand: 0.04}")
    fleet = spec_repo / FLEET_FILE
    fleet.write_text(fleet.read_text(encoding="utf-8").replace("USD", "EUR", 1))
    assert first_lines(spec_repo) == [
        "specs/clusters.yaml:22:17: clusters[1].prices.currency: prices in EUR, but prices are "
        "in USD"
    ]
