"""`benchfleet export MODULE:FACTORY`: a team's own model to a `.pt2` the runner measures.

It imports and runs the factory's code, which is the user's own, on the user's machine: so
it lives apart from synth (which reads specs from pull requests and imports no torch), and
nothing that validates or synthesizes specs imports it. `exporter.cli` is light (click);
torch and the factory are imported only when the command runs (`exporter.build`).
"""
