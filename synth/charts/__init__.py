"""One cdk8s Chart per concern; each becomes one file under dist/ or clusters/."""
