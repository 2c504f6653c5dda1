"""The runbook's Python helper: everything with JSON, YAML, HTTP or quoting.

Run as `python -m mvp COMMAND` with helpers/ on PYTHONPATH; the bash scripts
do that for you. Modules import only the standard library at the top, so the
commands that must be fast (status, waits, the skip paths) stay fast; PyYAML,
pyarrow and Ray are imported where they are needed.
"""
