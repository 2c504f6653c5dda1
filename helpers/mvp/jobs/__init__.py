"""Submitting and controlling a job from the host: the JobSpec, the plan,
admission, the submission, waiting, status, archiving and retries."""
