"""The `benchfleet` command, put together from the packages that own its parts."""
