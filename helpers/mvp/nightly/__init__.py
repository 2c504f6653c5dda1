"""The nightly regression (60) and its bisection (61): the suite, the judge,
history and bands, reports, the index page, retention, notify. The suite,
notify and bisect run on this host; the steps of `nightly` on this host when
the nodes see its files (MVP_HOST_SEES_NODE_FILES=1), else on the head."""
