"""The cluster every job shares: Ray's node list, the registry of cluster names, and the verl code snapshots."""
