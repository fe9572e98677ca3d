"""Stand-ins for what cannot be had on demand: a Kubernetes API server that injects the faults
a real one shows only by chance (429s, cut watches, expired histories), and API-shaped Jobs,
pods and events to feed it. For the collector's tests and benchmarks; never product code.

The Jobs start from a workflow of this package's own (`fixture.py`), synthesized once per
process, so editing the committed examples changes nothing here.
"""
