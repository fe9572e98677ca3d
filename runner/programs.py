"""The models a pod has loaded, by name: a group of variants loads each of its models once.

The first `torch.export.load` in a process costs seconds of one-time imports, later ones
0.04-0.7 s (docs/decisions/runner.md), and a group's variants of one model share the file's sha256
check, archive check and download too (a download is verified as it streams and kept in
the pod's /tmp under its sha256). A variant whose preparation changes the program's tensors
gets a copy of the program's module: `ExportedProgram.module()` shares its tensors with the
program, and casting or quantizing them would change what the next variant of the model
loads. One that changes none (fp32 on the CPU, unquantized) runs on the program's own
tensors: a copy would hold the model's weights twice (a BERT-base runner peaked at 3.5 times
its file above torch's own memory, 1.5 times without).
"""

import copy
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import torch
from torch.export import ExportedProgram
from torch.fx import GraphModule

from contract.config import OCI_MODELS_DIR, ModelConfig, ProgramConfig, RecordedConfig
from contract.result import ModelLoad
from runner.errors import InputsMismatch, ModelLoadError, ModelMismatch
from runner.loading import load_verified, model_file
from runner.recorded import Replay, read_replay


@dataclass
class Programs:
    """Loaded programs by model name, and the load errors, which a second try would repeat."""

    models_dir: Path
    scratch: Path
    """Where downloads go: the pod's /tmp."""
    ca_dir: Path | None = None
    """The CA bundles the pod's downloads may trust (CA_PATH)."""
    oci_dir: Path = Path(OCI_MODELS_DIR)
    """Where each `oci` model's image volume is mounted (OCI_MODEL_PATH)."""
    image_root: Path = Path("/")
    """The root `image_path` models are found under (IMAGE_ROOT)."""
    _loaded: dict[str, ExportedProgram] = field(default_factory=dict)
    _failed: dict[str, ModelLoadError] = field(default_factory=dict)
    _unclaimed: dict[str, ModelLoad] = field(default_factory=dict)
    _replay: Replay | ModelLoadError | InputsMismatch | None = None

    def program(self, name: str, model: ProgramConfig) -> ExportedProgram:
        """The program `name` (a model's, or a stage's under its `program_name`), loaded on
        first use with the same checks whichever it is; raises ModelLoadError."""
        if name in self._failed:
            raise ModelLoadError(str(self._failed[name]))
        if name not in self._loaded:
            try:
                began = time.perf_counter()
                path = model_file(
                    model,
                    self.models_dir,
                    self.scratch,
                    self.ca_dir,
                    self.oci_dir,
                    self.image_root,
                )
                fetched = time.perf_counter()
                layers = model.layers if isinstance(model, ModelConfig) else None
                self._loaded[name] = load_verified(path, layers)
            except ModelLoadError as error:
                self._failed[name] = error
                raise
            self._unclaimed[name] = ModelLoad(
                source=model.source,
                file_bytes=path.stat().st_size,
                fetch_s=fetched - began,
                load_s=time.perf_counter() - fetched,
            )
        return self._loaded[name]

    def recording(self, recorded: RecordedConfig) -> Replay:
        """The recorded inputs, reached and checked as a model's file is, read on first use;
        raises InputsMismatch (another file than config.json pins, or no recording) or
        ModelLoadError (not there to read), every time it is asked."""
        if self._replay is None:
            try:
                path = model_file(
                    recorded,
                    self.models_dir,
                    self.scratch,
                    self.ca_dir,
                    self.oci_dir,
                    self.image_root,
                )
                self._replay = read_replay(path, recorded.sha256, recorded.contents)
            except ModelMismatch as error:
                self._replay = InputsMismatch(f"the recorded inputs are refused: {error}")
            except (ModelLoadError, InputsMismatch) as error:
                self._replay = error
        if isinstance(self._replay, ModelLoadError | InputsMismatch):
            raise type(self._replay)(str(self._replay))
        return self._replay

    def claim(self, name: str) -> ModelLoad | None:
        """How model `name` was loaded, the first time it is asked for after its load (by the
        variant whose result reports it); None afterwards: the pod paid for it once."""
        return self._unclaimed.pop(name, None)


def own_module(program: ExportedProgram) -> GraphModule:
    """A module of `program` whose tensors are its own, to cast and quantize: the module of a
    copy of the program. Not a copy of the module: deepcopy drops the forward hooks
    `module()` installs (the input checks against the program's guards, the pytree
    flattening), and the copy then ran tiny-mlp in 0.67x the time torch's own module takes,
    a number no user of the model would see."""
    with warnings.catch_warnings():
        # torch 2.13's pytree warns about its own LeafSpec while copying a program's specs:
        # nothing the runner can change, and once per variant in every log.
        warnings.filterwarnings("ignore", message=".*LeafSpec.*", category=FutureWarning)
        module: GraphModule = copy.deepcopy(program).module()
    return module


def module_for(
    program: ExportedProgram, dtype: torch.dtype, device: torch.device, *, quantized: bool
) -> GraphModule:
    """A module of `program` to run in `dtype` on `device` (`quantized` where it will be): on
    the program's own tensors where preparing it changes none of them, else `own_module`."""
    if is_own(program, dtype, device, quantized=quantized):
        return program.module()
    return own_module(program)


def is_own(
    program: ExportedProgram, dtype: torch.dtype, device: torch.device, *, quantized: bool
) -> bool:
    """Whether `module_for` runs `program` on its own tensors, uncopied: preparing it to run
    in `dtype` on `device` (`quantized` where it will be) changes none of them."""
    return not quantized and _runs_as_loaded(program, dtype, device)


def _runs_as_loaded(program: ExportedProgram, dtype: torch.dtype, device: torch.device) -> bool:
    """Whether every tensor of `program` is on `device` with floating ones in `dtype`, and
    no operator of its graph writes into a tensor (a buffer a later variant would see)."""
    signature = program.graph_signature
    if signature.buffers_to_mutate or signature.user_inputs_to_mutate:
        return False
    for node in program.graph.nodes:
        target = node.target
        if isinstance(target, torch._ops.OpOverload) and target._schema.is_mutable:
            return False
    tensors = [*program.state_dict.values(), *program.constants.values()]
    return all(
        isinstance(tensor, torch.Tensor)
        and tensor.device == device
        and (tensor.dtype == dtype or not tensor.is_floating_point())
        for tensor in tensors
    )
