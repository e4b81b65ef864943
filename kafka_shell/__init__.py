"""kafka-shell: an admin shell for Apache Kafka (KIP-4)."""

__version__ = "0.1.0"  # setup.cfg reads it from here
