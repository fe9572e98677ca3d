"""Real, tiny model files for the benches' stress sets: `torch.export` archives of one small
program (a Linear layer, 64 features in, a dynamic batch), each with a bias of its own, so
that every file is distinct, about 8 KiB, and passes synth's checks (the archive's, and the
spec's inputs against its input specs) as a committed model does. Random bytes, which the
stress sets used to be, are refused by synth since it checks archives.

    python -m bench.stress_models FOLDER NAME...

Written by a child process: the benches time synth in their own process, and torch's
imported objects would slow that down (Python's garbage collector walks them).
"""

import io
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Final

FEATURES: Final = 64
"""The input each model takes per sample: a spec's `inputs: [{shape: [64]}]`."""


def write_models(folder: Path, names: Sequence[str]) -> None:
    """A distinct model file `folder`/NAME for each of `names`."""
    folder.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [sys.executable, "-m", "bench.stress_models", str(folder), *names],
        check=True,
        cwd=Path(__file__).resolve().parent.parent,
    )


def _write(folder: Path, names: Sequence[str]) -> None:
    import torch  # noqa: PLC0415 (the child's alone: see the module's docstring)

    from exporter.inputs import MAX_BATCH  # noqa: PLC0415

    torch.manual_seed(0)
    module = torch.nn.Linear(FEATURES, 2).eval()
    batch = torch.export.Dim("batch", min=1, max=MAX_BATCH)
    program = torch.export.export(module, (torch.randn(2, FEATURES),), dynamic_shapes=({0: batch},))
    bias = program.state_dict["bias"]
    with torch.no_grad():
        for number, name in enumerate(names):
            # Exporting is seconds a program, saving milliseconds: one export, a bias each.
            bias.fill_(float(number))
            buffer = io.BytesIO()
            torch.export.save(program, buffer)
            (folder / name).write_bytes(buffer.getvalue())


if __name__ == "__main__":
    _write(Path(sys.argv[1]), sys.argv[2:])
