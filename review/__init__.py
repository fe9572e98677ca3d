"""A pull request's review: specs, dist/, the plan and the results, as one comment.

The one place where synth (what merging would apply) and the collector (what the results
say) meet; a CI job runs it on every pull request (examples/ci/).
"""
