"""Scripts the farm ships: the standalone install helper, importable for the rule it holds."""
