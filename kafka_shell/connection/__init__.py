"""The connection layer: the connection manager and its router, cache and channels,
client settings and SASL; whom each request goes to, within one deadline."""
