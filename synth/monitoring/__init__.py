"""What Prometheus and Grafana need to watch benchmarks: the dashboard and the alert rules,
generated from the metric names in `contract.metrics`, so that they read what the collector
exports and nothing else."""
