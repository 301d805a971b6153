"""The autoscaling simulator's model: synthetic traffic, a replica's speed, the pool and its policies.
`benchmarks/autoscale_sim.py` is the command line; tests drive these modules directly."""
