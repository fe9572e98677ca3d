"""Did-you-mean: ranked by edit distance, where a change of case or a look-alike character
is the likeliest slip, and honest about ties."""

import pytest

from synth.catalogue import DEVICE_TYPES
from synth.hints import closest, did_you_mean, likely

KEYS = ["benchmark", "clusters", "description", "id", "image", "models", "owner", "targets"]
PRECISIONS = ["bf16", "fp16", "fp32", "tf32"]


@pytest.mark.parametrize(
    ("word", "candidates", "meant"),
    [
        ("nvidia-a10O", DEVICE_TYPES, "nvidia-a100"),
        ("nvida-t4", DEVICE_TYPES, "nvidia-t4"),
        ("BF16", PRECISIONS, "bf16"),
        ("FP32", PRECISIONS, "fp32"),
        ("ID", KEYS, "id"),
        ("Targets", KEYS, "targets"),
        ("tagrets", KEYS, "targets"),
        ("gpu-type", ["gpu_type", "gpu_count", "name"], "gpu_type"),
        ("mem", ["cpu", "ephemeral-storage", "memory"], "memory"),
        ("gpu", ["cpu", "ephemeral-storage", "memory", "nvidia.com/gpu"], "nvidia.com/gpu"),
        ("GPU", ["cpu", "ephemeral-storage", "memory", "nvidia.com/gpu"], "nvidia.com/gpu"),
    ],
)
def test_the_likeliest_candidate_is_proposed(word: str, candidates: list[str], meant: str) -> None:
    assert closest(word, candidates) == meant


@pytest.mark.parametrize(
    ("word", "candidates"),
    [("x", KEYS), ("schedule-me", KEYS), ("a" * 100_000, KEYS), ("", KEYS), ("fp8", ["cpu"])],
)
def test_nothing_is_proposed_for_a_word_that_is_no_typo(word: str, candidates: list[str]) -> None:
    assert likely(word, candidates) == []


def test_equally_likely_candidates_are_all_proposed() -> None:
    assert likely("nvidia-a10", DEVICE_TYPES) == ["nvidia-a100", "nvidia-a10g"]
    assert closest("nvidia-a10", DEVICE_TYPES) is None
    assert did_you_mean("nvidia-a10", ["nvidia-a100", "nvidia-a10g"]).startswith(
        "did you mean 'nvidia-a100' or 'nvidia-a10g'? "
    )
