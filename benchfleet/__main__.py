from benchfleet.cli import cli

cli(prog_name="benchfleet")
