"""The shared root's data and model, made on the head by `prepare` (30):
GSM8K parquet, a hub or local model, the tiny model of the CPU profile."""
