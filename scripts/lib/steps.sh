# shellcheck shell=bash disable=SC2034  # read by the scripts, tests and benchmarks that source this file
# The bring-up sequence, defined once: the nightly, the tests, the benchmarks
# and `make demo` run these scripts in this order.
MVP_BRINGUP_STEPS=(00_prereq_check 01_up 20_start_head 21_start_workers)
