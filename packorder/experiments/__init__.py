"""`packorder experiment` and `packorder sample`: a repository repacked once per order, each
copy measured; and a deterministic sample repository to run it on."""
