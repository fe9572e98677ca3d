"""The pod executor resolves a container's secretKeyRefs as a kubelet does: from the Secret
the API server holds, read with the executor's own credentials as the container starts.

The pods are bare pods bound to a kwok node in a namespace of the test's own, their outcome a
rule, so only the executor's part is under test: the env it resolves and the status it
writes while a Secret is missing.
"""

import json
import secrets
from collections.abc import Iterator

import pytest

from contract.lake import ACCESS_KEY_ENV, CREDENTIAL_KEYS, JOB_NAME_ENV, SECRET_KEY_ENV
from contract.layout import JOB_NAME_LABEL
from localcluster.podexecutor import CONFIG_RETRY_S, Exit, downward_fields
from localrun.pod import ContainerConfigError, container_env
from synth.store_env import store_env
from tests.cluster.conftest import LiveCluster, Obj, wait_for
from tests.lakeserver import EXAMPLE_STORE

pytestmark = pytest.mark.cluster


@pytest.fixture
def namespace(live: LiveCluster) -> Iterator[str]:
    name = f"secrets-{secrets.token_hex(4)}"
    live.kubectl("create", "namespace", name)
    yield name
    live.run("delete", "namespace", name, "--wait=false")


def _pod(live: LiveCluster, namespace: str, workflow: str, env: list[Obj]) -> Obj:
    """A pod of `workflow` whose container has `env`, bound to a node at once, as a Job's
    pod is once scheduled."""
    node = live.get("nodes")["items"][0]["metadata"]["name"]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "runner",
            "namespace": namespace,
            "labels": {"workflow": workflow, JOB_NAME_LABEL: "bench-abc"},
        },
        "spec": {
            "nodeName": node,
            "automountServiceAccountToken": False,
            "restartPolicy": "Never",
            "containers": [{"name": "runner", "image": "runner:local", "env": env}],
        },
    }


def _waiting(live: LiveCluster, namespace: str) -> Obj | None:
    pod = live.get("pod", "runner", "-n", namespace)
    for status in pod.get("status", {}).get("containerStatuses", []):
        waiting: Obj | None = status["state"].get("waiting")
        return waiting
    return None


def _phase(live: LiveCluster, namespace: str) -> str:
    return str(live.get("pod", "runner", "-n", namespace).get("status", {}).get("phase", ""))


def test_a_store_pods_env_holds_the_secrets_keys_and_its_jobs_name(
    live: LiveCluster, namespace: str
) -> None:
    values = {ACCESS_KEY_ENV: "writer", SECRET_KEY_ENV: "s3cret", "unused": "x"}
    live.apply_secret(namespace, EXAMPLE_STORE.credentials_secret, values)
    workflow = f"env-{namespace}"
    live.rules.defaults[workflow] = Exit(0, reason="Completed")
    pod = _pod(live, namespace, workflow, store_env(EXAMPLE_STORE, "us-east", workflow, None))
    live.kubectl("apply", "-f", "-", stdin=json.dumps(pod))
    created = live.get("pod", "runner", "-n", namespace)
    (container,) = created["spec"]["containers"]
    reader = live.executor.secrets(namespace)
    env = container_env(container, downward_fields(created), 0, "bench-abc", reader)
    assert {key: env.values[key] for key in CREDENTIAL_KEYS} == {
        key: values[key] for key in CREDENTIAL_KEYS
    }
    assert env.from_secrets == frozenset(CREDENTIAL_KEYS)
    assert env.values[JOB_NAME_ENV] == "bench-abc"
    assert "unused" not in env.values
    assert reader("absent") is None
    with pytest.raises(ContainerConfigError, match="couldn't find key nothing"):
        required = {"name": EXAMPLE_STORE.credentials_secret, "key": "nothing"}
        container_env(
            {"env": [{"name": "X", "valueFrom": {"secretKeyRef": required}}]}, {}, 0, "", reader
        )


def test_an_optional_secret_that_is_missing_is_left_unset_and_the_pod_runs(
    live: LiveCluster, namespace: str
) -> None:
    workflow = f"optional-{namespace}"
    live.rules.defaults[workflow] = Exit(0, reason="Completed")
    pod = _pod(live, namespace, workflow, store_env(EXAMPLE_STORE, "us-east", workflow, None))
    live.kubectl("apply", "-f", "-", stdin=json.dumps(pod))
    wait_for("the pod to succeed", lambda: _phase(live, namespace) == "Succeeded")


def test_a_required_secret_that_is_missing_waits_with_create_container_config_error(
    live: LiveCluster, namespace: str
) -> None:
    """As a kubelet: the container is not started, the pod stays Pending saying why, and it
    starts once the Secret is there."""
    workflow = f"required-{namespace}"
    live.rules.defaults[workflow] = Exit(0, reason="Completed")
    reference = {"name": "vault", "key": "TOKEN"}
    env = [{"name": "TOKEN", "valueFrom": {"secretKeyRef": reference}}]
    live.kubectl("apply", "-f", "-", stdin=json.dumps(_pod(live, namespace, workflow, env)))
    waiting = wait_for("the container to wait", lambda: _waiting(live, namespace))
    assert waiting == {
        "reason": "CreateContainerConfigError",
        "message": 'secret "vault" not found',
    }
    assert _phase(live, namespace) == "Pending"
    live.apply_secret(namespace, "vault", {"OTHER": "x"})
    named = f"couldn't find key TOKEN in Secret {namespace}/vault"
    wait_for(
        "the missing key to be named",
        lambda: (_waiting(live, namespace) or {}).get("message") == named,
        timeout_s=3 * CONFIG_RETRY_S + 30,
    )
    live.apply_secret(namespace, "vault", {"TOKEN": "t"})
    wait_for(
        "the pod to start once the key is there",
        lambda: _phase(live, namespace) == "Succeeded",
        timeout_s=3 * CONFIG_RETRY_S + 30,
    )
