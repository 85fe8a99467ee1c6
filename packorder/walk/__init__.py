"""The repository's object walk and the facts about history the orders need: every object
in the order Git's walk discovers it (ours, native/src/walk, or Git's `rev-list`), where each
is stored, and where each sits in history. Beneath the repack, the simulator and fleet triage alike."""
