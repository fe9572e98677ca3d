"""How much a pod's /tmp (an emptyDir, the only place it may write) must hold: torch's caches
and the models it downloads. Sized from the models, so that a pod evicted for disk is told
"Usage of EmptyDir volume tmp exceeds the limit" rather than the node running out, and a
model larger than a pod may write is a spec error."""

from collections.abc import Collection, Iterable, Mapping
from typing import Final

TMP_BASE_BYTES: Final = 1 << 30
"""What /tmp holds besides downloads (torch's and CUDA's caches, compiled kernels): all of
/tmp before downloads were sized, and the bound synth holds a pod that compiles with
inductor to. Measured on CPU with torch 2.13: a pod compiling tiny-mlp wrote 156 MB (a
precompiled header of 155 MB under $TMPDIR, where TORCHINDUCTOR_CACHE_DIR does not reach,
and 0.4 MB of generated code and built extensions); an eager pod wrote nothing. Kernels grow
with the model's graph, the header does not."""

_MI: Final = 1 << 20
_GI: Final = 1 << 30


def tmp_bytes(pods: Iterable[Collection[str]], downloads: Mapping[str, int]) -> int:
    """The /tmp a pod template needs whose pods run the models `pods` lists, one collection
    per pod: the base, and the most one pod downloads (`downloads` by model; a model not in
    it is not downloaded). A pod downloads each of its models once and keeps it."""
    most = max((sum(downloads.get(model, 0) for model in set(pod)) for pod in pods), default=0)
    return TMP_BASE_BYTES + most


def quantity(count: int) -> str:
    """`count` bytes as a Kubernetes quantity: whole GiB where it is, else MiB rounded up."""
    return f"{count // _GI}Gi" if count % _GI == 0 else f"{-(-count // _MI)}Mi"
