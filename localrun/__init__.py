"""Run a synthesized Job's pods on this machine, with no cluster: the kubelet's part, thinly.

`make demo` runs them as processes, `make e2e-container` in podman; both start from the same
manifests Flux would apply, so what runs locally is what would run in the cluster.
"""
