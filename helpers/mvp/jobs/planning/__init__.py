"""A JobSpec becoming a plan: the spec and command line checked, the workload, profile, data, rewards and overrides resolved, before anything is sent."""
