"""GitHub Actions, modelled from the workflow files themselves (docs/adr/0013-actions-model.md):
model.py is the entry point, each other module one concern of it."""
