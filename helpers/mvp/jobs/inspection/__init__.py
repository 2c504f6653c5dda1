"""Looking at jobs without changing them: the cluster's and the jobs' status, one job's status, its progress and its step table."""
