"""`packorder index-pack`: a pack's .idx and .rev, byte-identical to Git's."""
