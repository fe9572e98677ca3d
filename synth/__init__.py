"""Specs in, manifests out: the spec language, its validation, and synthesis with cdk8s."""

import os

# cdk8s runs on jsii, which prints a banner on every start under Node.js 20 (end of life,
# and the Node.js these machines have) unless told not to.
os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")
