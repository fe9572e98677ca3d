"""A `url` model's download in the manifests: the CA bundle a company commits reaches the pods
in a ConfigMap (never the image), config.json carries the download's bounds, the pod's /tmp
is sized for what it downloads, and every mistake is an error at the field that makes it."""

import json
import shutil
from pathlib import Path, PurePosixPath
from typing import Any

import kubernetes_validate  # type: ignore[import-untyped]
import pytest

from contract.config import CA_DIR, CA_ENV, CONFIG_FILE, DEFAULT_DOWNLOAD_BUDGET_S
from synth.ca_bundles import check_ca_bundle
from synth.cache import RenderCache
from synth.load import load_specs
from synth.render import render
from tests.model_server import Authority, make_authority
from tests.synth.conftest import WriteSpec, problems_in
from tests.synth.manifests import KUBERNETES_VERSION, objects

SHA = "ab" * 32
BUNDLE = "certs/company-ca.pem"

WORKFLOW = """\
id: remote
description: d
owner: o
clusters: [alpha]
models:
  - name: encoder
    url: https://models.example.com/encoder.pt2
    sha256: {sha}
{extra}benchmark:
  inputs: [{{shape: [64]}}]
targets:
  - gpu_type: cpu
{target}"""


def spec(extra: str = "", target: str = "", models: str = "") -> str:
    """The workflow with `extra` lines in its first model, `models` after it, `target`
    lines in its target."""
    return WORKFLOW.format(sha=SHA, extra=extra + models, target=target)


@pytest.fixture
def bundle(spec_repo: Path, company_ca: Authority) -> Path:
    """The company CA's certificate, committed."""
    path = spec_repo / BUNDLE
    path.parent.mkdir()
    shutil.copyfile(company_ca.certificate, path)
    return path


def trust_in_fleet(root: Path, file: str = BUNDLE) -> None:
    fleet = root / "specs" / "clusters.yaml"
    fleet.write_text(fleet.read_text(encoding="utf-8") + f"ca_bundle: {file}\n", encoding="utf-8")


def rendered(root: Path, write_spec: WriteSpec, text: str) -> dict[str, list[dict[str, Any]]]:
    """The workflow's objects by kind, each checked against Kubernetes' own schema."""
    files = render(load_specs(root, [write_spec("remote.yaml", text)]))
    found: dict[str, list[dict[str, Any]]] = {}
    for path, obj in objects(files):
        if path == PurePosixPath("dist/alpha/workloads/remote.yaml"):
            kubernetes_validate.validate(obj, KUBERNETES_VERSION, strict=True)
            found.setdefault(obj["kind"], []).append(obj)
    return found


def pod_of(found: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    (job,) = found["Job"]
    pod: dict[str, Any] = job["spec"]["template"]["spec"]
    return pod


def config_of(found: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    (config,) = [c for c in found["ConfigMap"] if CONFIG_FILE in c.get("data", {})]
    loaded: dict[str, Any] = json.loads(config["data"][CONFIG_FILE])
    return loaded


def tmp_size(pod: dict[str, Any]) -> str:
    (tmp,) = [volume for volume in pod["volumes"] if volume["name"] == "tmp"]
    size: str = tmp["emptyDir"]["sizeLimit"]
    return size


@pytest.mark.usefixtures("bundle")
def test_the_fleets_ca_bundle_reaches_the_pod_in_a_configmap_and_config_json_names_it(
    spec_repo: Path, write_spec: WriteSpec, company_ca: Authority
) -> None:
    trust_in_fleet(spec_repo)
    found = rendered(spec_repo, write_spec, spec())
    key = check_ca_bundle(BUNDLE, company_ca.certificate.read_bytes()).key
    (ca_map,) = [c for c in found["ConfigMap"] if key in c.get("data", {})]
    assert ca_map["data"][key] == company_ca.certificate.read_text(encoding="ascii")
    assert ca_map["immutable"] is True
    pod = pod_of(found)
    (volume,) = [v for v in pod["volumes"] if v["name"] == "ca-bundles"]
    sources = volume["projected"]["sources"]
    assert sources == [
        {"configMap": {"name": ca_map["metadata"]["name"], "items": [{"key": key, "path": key}]}}
    ]
    (container,) = pod["containers"]
    assert {"name": "ca-bundles", "mountPath": CA_DIR, "readOnly": True} in container[
        "volumeMounts"
    ]
    assert {"name": CA_ENV, "value": CA_DIR} in container["env"]
    assert config_of(found)["models"]["encoder"] == {
        "source": "url",
        "location": "https://models.example.com/encoder.pt2",
        "sha256": SHA,
        "size_bytes": 1 << 30,
        "download_budget_s": DEFAULT_DOWNLOAD_BUDGET_S,
        "ca_bundle": key,
        "ca_bundle_file": BUNDLE,
    }
    assert tmp_size(pod) == "2Gi", "1 GiB for torch's caches and 1 GiB for the download"


@pytest.mark.usefixtures("bundle")
def test_a_models_own_bundle_replaces_the_fleets(
    spec_repo: Path, write_spec: WriteSpec, tmp_path: Path
) -> None:
    other = make_authority(tmp_path / "other", "other-ca")
    shutil.copyfile(other.certificate, spec_repo / "certs" / "other-ca.pem")
    trust_in_fleet(spec_repo)
    found = rendered(spec_repo, write_spec, spec("    ca_bundle: certs/other-ca.pem\n"))
    key = check_ca_bundle("other", other.certificate.read_bytes()).key
    model = config_of(found)["models"]["encoder"]
    assert (model["ca_bundle"], model["ca_bundle_file"]) == (key, "certs/other-ca.pem")
    assert [list(c["data"]) for c in found["ConfigMap"] if "config.json" not in c["data"]] == [
        [key]
    ]


def test_without_a_bundle_a_download_trusts_the_images_cas_alone(
    spec_repo: Path, write_spec: WriteSpec
) -> None:
    found = rendered(spec_repo, write_spec, spec("    size: 3Gi\n    download_budget: 45m\n"))
    pod = pod_of(found)
    assert all(volume["name"] != "ca-bundles" for volume in pod["volumes"])
    model = config_of(found)["models"]["encoder"]
    assert (model["size_bytes"], model["download_budget_s"]) == (3 << 30, 2700.0)
    assert "ca_bundle" not in model
    assert tmp_size(pod) == "4Gi"


def test_tmp_holds_what_the_pod_that_downloads_most_downloads(
    spec_repo: Path, write_spec: WriteSpec
) -> None:
    """Two url models in one pod (variants_per_pod 2) both stay on its disk."""
    second = (
        "  - name: decoder\n    url: https://models.example.com/decoder.pt2\n"
        f"    sha256: {SHA}\n    size: 500M\n"
    )
    text = spec("    size: 300M\n", models=second) + "scheduling: {variants_per_pod: 2}\n"
    assert tmp_size(pod_of(rendered(spec_repo, write_spec, text))) == "1787Mi"
    alone = spec("    size: 300M\n", models=second)
    assert tmp_size(pod_of(rendered(spec_repo, write_spec, alone))) == "1501Mi"


@pytest.mark.parametrize(
    ("extra", "target", "where", "message"),
    [
        (
            "    size: 2Gi\n",
            "    resources: {requests: {cpu: 1, memory: 1Gi}, "
            "limits: {cpu: 1, memory: 1Gi, ephemeral-storage: 2Gi}}\n",
            "models[0].size",
            "model encoder needs 3.0 GiB of /tmp (2.0 GiB of downloads, 1.0 GiB for torch's "
            "caches), more than target 'cpu''s ephemeral-storage limit of 2Gi",
        ),
        (
            "",
            "    resources: {requests: {cpu: 1, memory: 1Gi}, "
            "limits: {cpu: 1, memory: 1Gi, ephemeral-storage: 1500Mi}}\n",
            "models[0].url",
            "a url model without a size may be 1Gi",
        ),
        ("    size: 1.5\n", "", "models[0].size", "size 1.5 is not a whole number of bytes"),
        ("    size: 300Gi\n", "", "models[0].size", "size 300Gi is more than 256 GiB"),
        ("    download_budget: 0s\n", "", "models[0].download_budget", "at least 1 second"),
        ("    ca_bundle: certs/absent.pem\n", "", "models[0].ca_bundle", "does not exist"),
    ],
)
def test_a_download_that_cannot_fit_or_run_is_an_error_at_its_field(
    spec_repo: Path, write_spec: WriteSpec, extra: str, target: str, where: str, message: str
) -> None:
    write_spec("remote.yaml", spec(extra, target))
    problems = [str(problem) for problem in problems_in(spec_repo)]
    assert any(f": {where}: " in problem and message in problem for problem in problems), problems


@pytest.mark.usefixtures("bundle")
@pytest.mark.parametrize("key", ["size: 1Gi", "download_budget: 10m", f"ca_bundle: {BUNDLE}"])
def test_download_fields_on_a_committed_model_are_errors_at_them(
    spec_repo: Path, write_spec: WriteSpec, key: str
) -> None:
    text = (
        "id: local\ndescription: d\nowner: o\nclusters: [alpha]\nmodels:\n  - name: mlp\n"
        f"    file: models/examples/tiny-mlp.pt2\n    {key}\n"
        "benchmark:\n  inputs: [{shape: [64]}]\ntargets:\n  - gpu_type: cpu\n"
    )
    write_spec("local.yaml", text)
    (problem,) = problems_in(spec_repo)
    field = key.split(":", maxsplit=1)[0]
    assert (problem.line, problem.path) == (8, f"models[0].{field}")
    assert "applies to a model downloaded from its url" in problem.message


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n", "a private key"),
        (b"-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n", "cannot be read"),
        (b"# nothing here\n", "holds no certificate"),
        (b"\x30\x82\x01\x0a", "is not PEM text"),
        (b"-----BEGIN CERTIFICATE-----\n" + b"A" * (256 * 1024), "at most 262,144"),
    ],
)
def test_a_fleet_bundle_that_is_not_pem_certificates_is_an_error_at_its_line(
    spec_repo: Path, content: bytes, message: str
) -> None:
    (spec_repo / "certs").mkdir()
    (spec_repo / BUNDLE).write_bytes(content)
    trust_in_fleet(spec_repo)
    (problem,) = problems_in(spec_repo)
    assert (problem.file, problem.path) == ("specs/clusters.yaml", "ca_bundle")
    assert message in problem.message


def test_a_bundle_edited_renders_anew_with_a_new_configmap(
    spec_repo: Path, write_spec: WriteSpec, bundle: Path, tmp_path: Path
) -> None:
    """The bundle's content names its ConfigMap and key, and keys the render cache: an edited
    bundle is not served from the cache as it was."""
    cache = RenderCache(tmp_path / "cache")
    trust_in_fleet(spec_repo)
    write_spec("remote.yaml", spec())
    path = PurePosixPath("dist/alpha/workloads/remote.yaml")
    first = render(load_specs(spec_repo), cache)[path]
    shutil.copyfile(make_authority(tmp_path / "next", "next-ca").certificate, bundle)
    second = render(load_specs(spec_repo), cache)[path]
    assert second != first and second == render(load_specs(spec_repo))[path]
