"""The repository store: Git's object directories as packorder reads them (packs, loose
objects, alternates, promisor packs, the multi-pack-index), through Git where Git owns the format."""
