"""`make lake` and `make lake-down` as a user runs them (`python -m localcluster lake up`,
`lake down`): four export lines that point every command at a running server, the same
lines again while it runs, and a stop that says when there was nothing to stop."""

import shlex
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from contract.lake import ACCESS_KEY_ENV, ENDPOINT_ENV, LAKE_ENV, SECRET_KEY_ENV, parse_lake_url
from contract.objectstore import ObjectStore
from localcluster.cli import cli
from tests.lakeserver import LAKE_NOT_BUILT, lake_server_built

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not lake_server_built(), reason=LAKE_NOT_BUILT),
]


def exports(output: str) -> dict[str, str]:
    """What `eval` of the printed lines would set."""
    found = {}
    for line in output.splitlines():
        assert line.startswith("export "), line
        name, _, value = line.removeprefix("export ").partition("=")
        (found[name],) = shlex.split(value)
    return found


@pytest.fixture
def directory(tmp_path: Path) -> Iterator[Path]:
    folder = tmp_path / "lake"
    yield folder
    CliRunner().invoke(cli, ["lake", "down", "--dir", str(folder)])


def test_lake_up_prints_what_points_every_command_at_it_and_down_stops_it(
    directory: Path,
) -> None:
    up = CliRunner().invoke(cli, ["lake", "up", "--dir", str(directory), "--lake", "s3://bench/p"])
    assert up.exit_code == 0, up.output
    env = exports(up.stdout)
    assert set(env) == {ENDPOINT_ENV, ACCESS_KEY_ENV, SECRET_KEY_ENV, LAKE_ENV}
    assert env[LAKE_ENV] == "s3://bench/p"
    store = ObjectStore.for_lake(parse_lake_url(env[LAKE_ENV]), env=env)
    store.put_once("p/hello", b"hello")
    assert store.get("p/hello", max_bytes=5) == b"hello"

    again = CliRunner().invoke(
        cli, ["lake", "up", "--dir", str(directory), "--lake", "s3://bench/p"]
    )
    assert again.exit_code == 0 and exports(again.stdout) == env
    assert "is up in" not in again.stderr, "a running server is not started twice"

    down = CliRunner().invoke(cli, ["lake", "down", "--dir", str(directory)])
    assert (down.exit_code, down.stderr) == (0, "the lake's server stopped\n")
    down = CliRunner().invoke(cli, ["lake", "down", "--dir", str(directory)])
    assert (down.exit_code, down.stderr) == (0, "the lake's server is not running\n")


def test_a_lake_url_that_is_none_is_refused_naming_the_option(directory: Path) -> None:
    up = CliRunner().invoke(cli, ["lake", "up", "--dir", str(directory), "--lake", "s3://b/p"])
    assert up.exit_code == 2
    assert "Invalid value for --lake: s3://b/p: bucket 'b' is no S3 bucket name" in up.output
    assert not directory.exists(), "nothing started"
