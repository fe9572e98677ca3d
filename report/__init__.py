"""What a workflow's results say, read from the store and the records: the report of a run
(latency with its intervals, comparisons, cost, energy, accuracy) and the trend over runs,
rendered as text, Markdown, CSV, JSON and one self-contained web page.

The collector follows clusters and stores results; this package only reads what it stored
and what results/ records, so that a fresh clone reports without any cluster."""
