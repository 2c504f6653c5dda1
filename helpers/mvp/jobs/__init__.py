"""Submitting and controlling a job: the JobSpec, the plan, admission, the
submission (submit runs on the head), waiting, status, archiving and retries
(wait, status, logs and stop run on this host; each command's place is
declared beside its add_parser in __main__.py)."""
