"""The Responses API: POST /v1/responses (whole or streamed), GET and DELETE /v1/responses/{id}."""
from gateway.api.v1.responses.routes import router

__all__ = ["router"]
