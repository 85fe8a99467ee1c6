"""Write orders: which object goes where in a new pack. Pure functions from arrays to a
permutation, the catalog of orders by name, and the delta families they work on."""
