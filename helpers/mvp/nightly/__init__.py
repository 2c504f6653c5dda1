"""The nightly regression's judgement, reports, index page and retention."""
