"""One module per ``waza`` command; each exposes ``register(app)``."""
