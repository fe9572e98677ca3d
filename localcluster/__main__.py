from localcluster.cli import cli

cli(prog_name="python -m localcluster")
