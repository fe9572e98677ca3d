"""What the cluster allocated to a variant: the time its pods held their node's devices, from
scheduled to ended, every attempt of its completion index counted, and its share of that
where its pod ran several variants. Gather reads it from the pods (collector/allocation.py)
and stores it with the variant, in the database and in the record; the report prices it and
`make plan` estimates from it."""

from typing import Final, Literal

from pydantic import BaseModel, ConfigDict, Field

Capacity = Literal["on-demand", "spot"]
"""How the nodes a Job's pods run on are bought, as synth's CAPACITY_ANNOTATION says."""
CAPACITIES: Final[tuple[Capacity, ...]] = ("on-demand", "spot")
Unit = Literal["gpu", "cpu"]
"""What a pod holds and is counted in: its GPUs, or for a pod without any its CPUs."""


class Allocation(BaseModel):
    """One variant's part of its pods' time on their nodes."""

    model_config = ConfigDict(
        extra="forbid", frozen=True, use_attribute_docstrings=True, allow_inf_nan=False
    )

    # Unknown is None, which records and rows leave out: it reads back as None.
    seconds: float | None = Field(default=None, ge=0)
    """The variant's share of `pod_seconds`; None where that is unknown."""
    pod_seconds: float | None = Field(default=None, ge=0)
    """Scheduled (the PodScheduled condition's transition) to ended (the runner's
    finishedAt) of every attempt of its completion index, summed: image pull, model
    download or mount, load, compile, warm-up, measurement and the runner's exit, retries and
    preemptions included. None where it is unknown: a pod's times that cannot be right (its
    node's clock and the control plane's disagree, or a time is missing that a pod which ran
    has), or no pod of the index seen; `estimate` says why."""
    share: float = Field(ge=0, le=1)
    """Of `pod_seconds`: 1 for a pod of one variant; in a group, its own time (load to the
    end of its accuracy pass, from its result's timings) over the group's."""
    devices: float = Field(ge=0)
    """What each pod held: its GPUs, or for a pod without any the CPUs it requested."""
    unit: Unit
    device_type: str | None = None
    """The target's device type (`nvidia-a100`, `cpu`), as the Job says; None for a Job of
    a synth before it said."""
    capacity: Capacity | None = None
    """Spot or on-demand nodes, as the Job says; None for a Job of a synth before it said."""
    attempts: int = Field(default=0, ge=0)
    """The attempts whose time is counted."""
    estimate: tuple[str, ...] = ()
    """What of it is estimated rather than read, or unknown, in words: an end gather never
    saw, an attempt whose pod was gone before gather saw it (a lower bound then), a share
    for a variant that reported no timings, times that cannot be right (with the skew).
    Empty: read exactly, to the second (the API's timestamps have no finer resolution)."""

    @property
    def device_seconds(self) -> float | None:
        """GPU-seconds, or CPU-seconds for a pod without GPUs: what a price per device-hour
        multiplies; None where the time is unknown."""
        return None if self.seconds is None else self.seconds * self.devices
