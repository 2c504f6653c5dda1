"""A sent job until it is archived: waiting for its end, its logs and stop, archiving, bundles, fingerprints and retry chains."""
