"""The base shared by every group above it, wherever their commands run: the
settings, the shared root's layout, log lines, the dashboard's HTTP, verl's
step lines."""
