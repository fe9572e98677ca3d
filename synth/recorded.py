"""Which Jobs have their results recorded in git: `results/<workflow>/<cluster>/<job>.json`.

The collector writes these files (collector/records.py holds their format); synth only needs
their names, to leave recorded Jobs out of dist/. Synth reads the layout itself rather than
importing the collector and its cluster libraries; tests/synth/test_synth.py writes a record
with the collector's own code and checks that synth sees it.
"""

from pathlib import Path


def recorded_jobs(root: Path, workflow: str, cluster: str) -> list[str]:
    """Names of the Jobs of `workflow` in `cluster` that have a record, sorted."""
    folder = root / "results" / workflow / cluster
    return sorted(path.stem for path in folder.glob("*.json")) if folder.is_dir() else []
