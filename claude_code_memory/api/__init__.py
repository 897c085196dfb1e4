"""The HTTP edge: FastAPI app, routes and error translation."""
