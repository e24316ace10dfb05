"""The REST API of debates, AI models and schedules, one module per resource."""
