"""A job's life, one sub-package per stage: planning/ (a JobSpec becoming a plan), sending/ (admission and
the submission, on the head), after_sending/ (waiting, logs, stop, archiving, retries) and inspection/
(status, progress, the step table); each command's place is declared beside its add_parser in
__main__.py."""
