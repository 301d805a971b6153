"""The model pool on Ray Serve: one deployment per catalogue version."""
