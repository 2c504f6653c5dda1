"""The nightly regression (60) and its bisection (61) on the host: the suite,
the judge, history and bands, reports, the index page, retention, notify."""
