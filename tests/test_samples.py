"""Per-iteration durations survive the trip through the result line exactly, and bad data is
an error, never a wrong list."""

import base64
import random
import zlib

import pytest

from contract.samples import MAX_SAMPLES, Samples, encode


@pytest.mark.parametrize(
    "durations",
    [
        [1],
        [250_000, 240_000, 2_000_000, 0, 1],
        [random.Random(seed).randrange(1, 10**12) for seed in range(500)],
        [2**62, 1, 2**62],
    ],
)
def test_durations_come_back_exactly(durations: list[int]) -> None:
    samples = Samples.model_validate_json(encode(durations).model_dump_json())
    assert samples.durations_ns() == durations
    assert (samples.count, samples.stride) == (len(durations), 1)


def test_beyond_the_maximum_every_kth_iteration_is_kept() -> None:
    durations = list(range(3 * MAX_SAMPLES + 1))
    samples = encode(durations)
    assert samples.stride == 4
    assert samples.durations_ns() == durations[::4]


def test_steady_durations_take_a_few_characters_each() -> None:
    rng = random.Random(0)
    durations = [int(rng.gauss(250_000, 5_000)) for _ in range(10_000)]
    assert len(encode(durations).data) < 4 * len(durations)


def _samples(packed: bytes, count: int) -> Samples:
    return Samples(count=count, data=base64.b64encode(zlib.compress(packed)).decode())


@pytest.mark.parametrize(
    ("samples", "message"),
    [
        (Samples(count=1, data="not base64!"), "not zigzag-delta-varint-zlib-base64"),
        (Samples(count=1, data=base64.b64encode(b"not zlib").decode()), "not zigzag"),
        (_samples(b"\x02\x04", 3), "hold 2 durations, not 3"),
        (_samples(b"\x80", 1), "end inside a varint"),
        (_samples(b"\xff" * 10 + b"\x01", 1), "longer than 64 bits"),
        (_samples(b"\x00" * (11 * MAX_SAMPLES), 1), "inflate beyond"),
    ],
)
def test_damaged_samples_are_an_error(samples: Samples, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        samples.durations_ns()


def test_nothing_to_encode_is_an_error() -> None:
    with pytest.raises(ValueError, match="no durations"):
        encode([])
