"""Credentials never in output: every error path of gather, status and clean, driven with a
kubeconfig that holds a secret in each place one can be (the server URL's userinfo, a token,
a password, a client key, an exec plugin's environment), and none of those secrets may appear
in stdout, stderr (JSON logs, verbose), the database or the records."""

import base64
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from benchfleet.collector import cli
from collector import kube
from collector.redact import Redactor, kubeconfig_secrets
from standin import objects
from standin.api import FakeApiServer
from tests.collector.gathering import Obj

PASSWORD_IN_URL = "url-pass-4c1e9d"
TOKEN = "bearer-token-77a0f3e2"
PASSWORD = "basic-pass-19be"
CLIENT_KEY = base64.b64encode(b"-----BEGIN PRIVATE KEY-----key-5d0c-----END").decode()
EXEC_SECRET = "exec-env-secret-a4d2"
SECRETS = (PASSWORD_IN_URL, TOKEN, PASSWORD, CLIENT_KEY, EXEC_SECRET)


def secret_kubeconfig(server: str, *, plugin: bool = False) -> str:
    """A kubeconfig for `server` (its URL given the userinfo `admin:PASSWORD_IN_URL`) whose
    user holds a token, a password and a client key, or with `plugin` an exec plugin that
    fails, echoing the secret its environment gives it."""
    scheme, rest = server.split("://")
    user: dict[str, Any] = {
        "token": TOKEN,
        "username": "admin",
        "password": PASSWORD,
        "client-key-data": CLIENT_KEY,
    }
    if plugin:
        user = {
            "exec": {
                "apiVersion": "client.authentication.k8s.io/v1beta1",
                "command": "sh",
                "args": ["-c", 'echo "token request refused for $PLUGIN_SECRET" >&2; exit 1'],
                "env": [{"name": "PLUGIN_SECRET", "value": EXEC_SECRET}],
            }
        }
    return yaml.safe_dump(
        {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {
                    "name": "us-east",
                    "cluster": {"server": f"{scheme}://admin:{PASSWORD_IN_URL}@{rest}"},
                }
            ],
            "users": [{"name": "collector", "user": user}],
            "contexts": [
                {"name": "us-east", "context": {"cluster": "us-east", "user": "collector"}}
            ],
            "current-context": "us-east",
        }
    )


def _unreachable(api: FakeApiServer, job: Obj) -> str:
    with FakeApiServer() as gone:
        return gone.url


def _refused_token(api: FakeApiServer, job: Obj) -> str:
    # A proxy in front of the API server that echoes the request's credentials.
    echoed = f"token {TOKEN} or user admin:{PASSWORD} not accepted"
    api.fail_next(1000, 401, message=echoed)
    return api.url


def _forbidden_lists(api: FakeApiServer, job: Obj) -> str:
    api.fail_next(1000, 403, path_contains="/jobs", message=f"forbidden for {TOKEN}")
    return api.url


def _lists_never_answer(api: FakeApiServer, job: Obj) -> str:
    api.add("jobs", objects.complete(job))
    api.fail_next(1000, 503, path_contains="/jobs", message=f"overloaded ({PASSWORD})")
    return api.url


def _logs_refused(api: FakeApiServer, job: Obj) -> str:
    api.add("pods", objects.crashed_pod(job, 0, exit_code=1, log=""))
    for index in range(1, 6):
        api.add("pods", objects.succeeded_pod(job, index))
    api.add("jobs", objects.failed_job(job, "FailedIndexes", completed=range(1, 6), failed=1))
    api.fail_next(1000, 404, path_contains="/log", message=f"no log for {TOKEN}")
    return api.url


def _gathered(api: FakeApiServer, job: Obj) -> str:
    for index in range(6):
        api.add("pods", objects.succeeded_pod(job, index))
    api.add("jobs", objects.complete(job))
    return api.url


Scenario = Callable[[FakeApiServer, Obj], str]


@pytest.mark.parametrize(
    ("scenario", "plugin"),
    [
        # These two exhaust the client's retries, whose delays the test shortens.
        (_unreachable, False),
        (_refused_token, False),
        (_forbidden_lists, False),
        (_lists_never_answer, False),
        (_logs_refused, False),
        (_gathered, False),
        # The plugin fails before any request: one scenario says all.
        (_gathered, True),
    ],
    ids=["unreachable", "401", "403", "503", "log-404", "gathered", "exec-plugin"],
)
@pytest.mark.parametrize(
    "command",
    [
        ("gather", "--workflow", "cpu-smoke", "--cluster", "us-east", "--timeout", "2s"),
        ("status", "--workflow", "cpu-smoke", "--cluster", "us-east"),
        ("clean", "--cluster", "us-east", "--dry-run"),
    ],
    ids=["gather", "status", "clean"],
)
def test_no_secret_of_the_kubeconfig_reaches_any_output(
    api: FakeApiServer,
    repo: Path,
    job: Obj,
    scenario: Scenario,
    plugin: bool,
    command: tuple[str, ...],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Every attempt and message as before, without waiting out the default backoff (0.5 s
    # doubling: 15.5 s for status and clean, which have no --timeout): what is said of a
    # failure does not depend on how long was waited between attempts.
    monkeypatch.setattr(kube, "RetryPolicy", partial(kube.RetryPolicy, base_delay_s=0.01))
    server = scenario(api, job)
    run = CliRunner().invoke(
        cli,
        ["--root", str(repo), "--log-format", "json", "-v", *command],
        env={"BENCHFLEET_K8S_KUBECONFIG": secret_kubeconfig(server, plugin=plugin)},
    )
    written = [path for path in repo.rglob("*") if path.is_file() and "dist" not in path.parts]
    outputs = {
        "stdout": run.stdout,
        "stderr": run.stderr,
        **{str(path): path.read_bytes().decode(errors="replace") for path in written},
    }
    assert run.exception is None or isinstance(run.exception, SystemExit), run.exception
    for where, text in outputs.items():
        for secret in SECRETS:
            assert secret not in text, f"{secret} in {where}"
    said = run.stdout + run.stderr
    if plugin:
        assert "exec: process returned 1" in said, "the plugin's failure is named"
        assert "token request refused for ***" in said, "masked, the rest of its words kept"
    elif scenario is _unreachable:
        assert "://***@127.0.0.1:" in said, "the server is named, without its userinfo"


def test_a_redactor_masks_userinfo_and_every_secret_of_a_kubeconfig() -> None:
    kubeconfig = yaml.safe_load(secret_kubeconfig("https://k.example:6443"))
    kubeconfig["users"].append(
        {
            "name": "oidc",
            "user": {
                "auth-provider": {
                    "name": "oidc",
                    "config": {"client-id": "benchfleet", "refresh-token": "refresh-0e7c1"},
                }
            },
        }
    )
    redact = Redactor().adding(kubeconfig_secrets(kubeconfig))
    text = (
        f"https://admin:{PASSWORD_IN_URL}@k.example:6443 said {TOKEN}, {PASSWORD}, "
        f"{CLIENT_KEY}, refresh-0e7c1; http://someone:else@proxy:3128 too"
    )
    assert redact(text) == (
        "https://***@k.example:6443 said ***, ***, ***, ***; http://***@proxy:3128 too"
    )
    assert redact("client benchfleet, user admin") == "client benchfleet, user admin"
