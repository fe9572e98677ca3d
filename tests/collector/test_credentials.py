"""The collector finds a cluster's credentials through its provider chain, and never shows them."""

from pathlib import Path
from typing import Any

import pytest
import yaml

from collector.credentials import CredentialsError, connect

TOKEN = "s3cr3t-token-never-printed"


def kubeconfig(server: str, contexts: tuple[str, ...] = ("us-east",)) -> str:
    document: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": c, "cluster": {"server": f"{server}/{c}"}} for c in contexts],
        "users": [{"name": "collector", "user": {"token": TOKEN}}],
        "contexts": [{"name": c, "context": {"cluster": c, "user": "collector"}} for c in contexts],
        "current-context": contexts[-1],
    }
    return yaml.safe_dump(document)


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    return tmp_path / "credentials"


def host(connection: Any) -> str:
    return str(connection.api_client.configuration.host)


def test_the_environment_comes_before_the_credentials_folder(folder: Path) -> None:
    folder.mkdir()
    (folder / "k8s_kubeconfig").write_text(kubeconfig("https://from-file"))
    environ = {"BENCHFLEET_K8S_KUBECONFIG": kubeconfig("https://from-env")}
    connection = connect("us-east", credentials_dir=folder, environ=environ)
    assert host(connection) == "https://from-env/us-east"
    assert connection.provider == "environment variable BENCHFLEET_K8S_KUBECONFIG"


def test_a_clusters_own_secret_comes_before_the_shared_one(folder: Path) -> None:
    environ = {
        "BENCHFLEET_K8S_KUBECONFIG": kubeconfig("https://shared"),
        "BENCHFLEET_K8S_KUBECONFIG_EU_WEST": kubeconfig("https://eu", contexts=("eu-west",)),
    }
    assert host(connect("eu-west", credentials_dir=folder, environ=environ)) == "https://eu/eu-west"


def test_the_credentials_folder_is_used_when_the_environment_has_none(folder: Path) -> None:
    folder.mkdir()
    (folder / "k8s_kubeconfig").write_text(kubeconfig("https://from-file"))
    connection = connect("us-east", credentials_dir=folder, environ={})
    assert connection.provider == f"credentials file {folder / 'k8s_kubeconfig'}"


def test_the_context_named_like_the_cluster_is_chosen(folder: Path) -> None:
    environ = {"BENCHFLEET_K8S_KUBECONFIG": kubeconfig("https://k", ("us-east", "eu-west"))}
    connection = connect("us-east", credentials_dir=folder, environ=environ)
    assert (connection.context, host(connection)) == ("us-east", "https://k/us-east")


def test_an_unknown_context_lists_the_known_ones(folder: Path) -> None:
    environ = {"BENCHFLEET_K8S_KUBECONFIG": kubeconfig("https://k")}
    with pytest.raises(CredentialsError, match=r"no context 'prod'.*\['us-east'\]"):
        connect("us-east", context="prod", credentials_dir=folder, environ=environ)


def test_kubectls_own_config_is_the_last_resort(folder: Path, tmp_path: Path) -> None:
    path = tmp_path / "kubectl-config"
    path.write_text(kubeconfig("https://kubectl"))
    connection = connect("us-east", credentials_dir=folder, environ={"KUBECONFIG": str(path)})
    assert connection.provider == f"kubeconfig {path}"


def test_no_credentials_anywhere_says_where_they_were_looked_for(
    folder: Path, tmp_path: Path
) -> None:
    with pytest.raises(CredentialsError) as raised:
        connect("us-east", credentials_dir=folder, environ={}, home=tmp_path)
    message = str(raised.value)
    assert "BENCHFLEET_K8S_KUBECONFIG_US_EAST" in message
    assert str(folder / "k8s_kubeconfig_us_east") in message
    assert "service account" in message


@pytest.mark.parametrize(
    "text",
    [f"users: [{{token: {TOKEN}}}]\n  bad: [indent", f"users: [{{token: {TOKEN}}}]\n"],
    ids=["not-yaml", "not-a-kubeconfig"],
)
def test_a_broken_kubeconfig_is_named_but_never_shown(folder: Path, text: str) -> None:
    with pytest.raises(CredentialsError) as raised:
        connect("us-east", credentials_dir=folder, environ={"BENCHFLEET_K8S_KUBECONFIG": text})
    assert "environment variable BENCHFLEET_K8S_KUBECONFIG" in str(raised.value)
    assert TOKEN not in str(raised.value)
    assert raised.value.__cause__ is None
