"""What synth, the runner, the collector and the harnesses agree on, in one torch-free place."""
