"""The protocol layer: Kafka's wire format (kio message types, frames, record batches,
codes) and Kafka's own definitions, shared by the shell and the sandbox."""
