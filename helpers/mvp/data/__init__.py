"""The shared root's data and model, made by `prepare` (30) on this host when
the nodes see its files (MVP_HOST_SEES_NODE_FILES=1), else on the head:
GSM8K parquet, a hub or local model, the tiny model of the CPU profile."""
