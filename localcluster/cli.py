"""`python -m localcluster`: build, start and stop a real Kubernetes control plane here."""

import signal
import sys
import threading
from pathlib import Path

import click

from contract.lake import LakeUrl, LakeUrlError, parse_lake_url
from localcluster.build import binary_dir, build, build_all, is_built
from localcluster.components import LAKE_TOOLS
from localcluster.controlplane import STATE_FILE, Cluster, start_cluster
from localcluster.lake import STATE_FILE as LAKE_STATE_FILE
from localcluster.lake import LakeServer, export_lines, new_server
from localcluster.podexecutor import running_executor, start_executor_process
from synth.load import load_specs

DEFAULT_DIR = Path(".cache") / "cluster"
LAKE_DIR = Path(".cache") / "lake"
LAKE_URL = "s3://benchfleet/lake"


@click.group(context_settings={"show_default": True})
def cli() -> None:
    """A real API server, Job controller and scheduler on this machine, with kwok nodes."""


@cli.command("build")
def build_command() -> None:
    """Build the binaries that are missing, the cluster's and the lake's server (minutes
    cold, nothing when warm)."""
    for folder in build_all():
        click.echo(folder)


@cli.command("built")
def built_command() -> None:
    """Exit 0 if the binaries of the committed versions are built, 1 otherwise."""
    raise SystemExit(0 if is_built() else 1)


@cli.command("up")
@click.option("--cluster", "name", default="us-east", help="The fleet cluster to shape it like.")
@click.option("--root", type=click.Path(file_okay=False, path_type=Path), default=Path("."))
@click.option("--dir", "directory", type=click.Path(path_type=Path), default=DEFAULT_DIR)
def up(name: str, root: Path, directory: Path) -> None:
    """Build what is missing, start the cluster and its pod executor, and leave them running."""
    binaries = build()
    fleet = load_specs(root).fleet
    known = [cluster.name for cluster in fleet.clusters]
    if name not in known:
        raise click.BadParameter(f"{name!r} is not in specs/clusters.yaml ({', '.join(known)})")
    home = (directory / name).resolve()
    if (home / STATE_FILE).exists():
        Cluster.load(home).stop()
    cluster = start_cluster(name, home, binaries, fleet)
    start_executor_process(cluster)
    # The result lake beside it, as `make lake` starts it: a fleet whose results_store
    # names its endpoint has its runners write there (docs/cluster.md).
    _running_lake(LAKE_DIR, parse_lake_url(LAKE_URL))
    click.echo(f"cluster {name} is up in {cluster.timings['total']:.1f} s ({cluster.server})")
    click.echo(f"  KUBECONFIG={cluster.kubeconfig} {binaries / 'kubectl'} get nodes")
    click.echo(f"  kubectl apply --server-side -k dist/{name}/infrastructure   (then workloads)")
    click.echo(f'  BENCHFLEET_K8S_KUBECONFIG="$(cat {cluster.kubeconfig})" collector gather ...')
    click.echo(f'  eval "$(make -s lake)"   (the result lake: {LAKE_URL} on loopback)')
    click.echo(f"  logs: {cluster.logs}/; stop it and the lake with `make cluster-down`")


@cli.command("down")
@click.option("--dir", "directory", type=click.Path(path_type=Path), default=DEFAULT_DIR)
def down(directory: Path) -> None:
    """Stop every cluster started under --dir, and the lake's server."""
    for state in sorted(directory.glob(f"*/{STATE_FILE}")):
        cluster = Cluster.load(state.parent)
        cluster.stop()
        click.echo(f"cluster {cluster.name} stopped")
    _stop_lake(LAKE_DIR)


@cli.group("lake")
def lake() -> None:
    """The result lake's S3-compatible server (SeaweedFS) on loopback."""


@lake.command("up")
@click.option("--dir", "directory", type=click.Path(path_type=Path), default=LAKE_DIR)
@click.option("--lake", "url", default=LAKE_URL, help="The bucket (created) and prefix.")
def lake_up(directory: Path, url: str) -> None:
    """Build the server if missing, start it (unless it runs) and print the shell lines
    that point every command at it: `eval "$(make -s lake)"`."""
    try:
        lake_url = parse_lake_url(url)
    except LakeUrlError as error:
        raise click.BadParameter(str(error), param_hint="--lake") from None
    for line in export_lines(_running_lake(directory, lake_url), lake_url):
        click.echo(line)


def _running_lake(directory: Path, lake_url: LakeUrl) -> LakeServer:
    """The lake's server under `directory`, started unless it runs with `lake_url`'s bucket
    (saying so on stderr)."""
    state = directory / LAKE_STATE_FILE
    server = LakeServer.load(directory) if state.exists() else None
    if server is None or not server.running or server.bucket != lake_url.bucket:
        if server is not None:
            server.stop()
        server = new_server(directory, build(toolset=LAKE_TOOLS), lake_url.bucket)
        seconds = server.start()
        click.echo(f"# the lake's server is up in {seconds:.1f} s; log: {server.log}", err=True)
    return server


def _stop_lake(directory: Path) -> None:
    server = LakeServer.load(directory) if (directory / LAKE_STATE_FILE).exists() else None
    if server is None or not server.running:
        click.echo("the lake's server is not running", err=True)
        return
    server.stop()
    click.echo("the lake's server stopped", err=True)


@lake.command("down")
@click.option("--dir", "directory", type=click.Path(path_type=Path), default=LAKE_DIR)
def lake_down(directory: Path) -> None:
    """Stop the server `lake up` started (its data stays under --dir)."""
    _stop_lake(directory)


@cli.command("executor", hidden=True)
@click.option("--kubeconfig", type=click.Path(exists=True, path_type=Path), required=True)
@click.option("--workdir", type=click.Path(path_type=Path), required=True)
def executor(kubeconfig: Path, workdir: Path) -> None:
    """Run the pod executor in the foreground until SIGTERM (`up` starts it)."""
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    with running_executor(kubeconfig, workdir):
        stop.wait()
    sys.exit(0)


@cli.command("where")
def where() -> None:
    """Print the folder of the binaries of the committed versions."""
    click.echo(binary_dir())
