"""The command line: one thin front end per command over the library."""
