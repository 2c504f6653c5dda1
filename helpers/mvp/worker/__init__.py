"""The job's worker side and the plain files every group shares: standard
library only, nothing imported from outside this folder. launch.py runs as a
file under the image's python3 (this folder is its sys.path[0]) and loads
its neighbours as top-level modules; the image check (00) runs the same way.
tests/unit/worker_side.bats imports each with python3 -I -S."""
