"""The host's base, shared by every group above it: the settings, the
shared root's layout, log lines, the dashboard's HTTP, verl's step lines."""
