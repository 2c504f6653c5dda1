"""Sending a planned job to Ray: admission against the cluster's GPUs, then the submission (run on the head)."""
