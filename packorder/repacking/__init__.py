"""The repack pipeline, and `packorder gc` around it: snapshot -> select deltas -> order ->
write -> verify -> bitmap -> install, with the lock, the recovery of an interrupted run and
the cruft pack. The `packorder.repack` function lives in `pipeline`."""
