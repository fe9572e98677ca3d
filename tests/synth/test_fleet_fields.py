"""Every string of specs/clusters.yaml that lands in a manifest is checked against the rule
of the field it lands in, and every repeat in a list used as a set is an error at the
repeat: the API server refuses what breaks them, and Flux then stops applying the cluster."""

from pathlib import Path

import pytest

from synth.load import FLEET_FILE
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
