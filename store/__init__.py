"""The results the collector stored, for whoever reads them: the database (`database.py`) and
the records in git (`history.py`). The collector writes here; the report, localrun and the
review read; nothing here follows a cluster."""
