from synth.cli import cli

cli(prog_name="benchfleet")
