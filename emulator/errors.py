"""Wire errors of each surface: one class per error, one handler turns them into bodies.

ApiError                /v1 and /_emulator: {"status": "error", "message", "errors"?}
  BadRequest            400, with per-field `errors`
  Unauthorized          401
  Forbidden             403
  NotFound              404
  Conflict              409
  PayloadTooLarge       413
  RateLimited           429, with the rate-limit headers
CrmError                /crm: {"error", "message"}
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from emulator.self_target import control_api_target
from emulator.wire import Wire, encode


class FieldError(Wire):
    field: str
    message: str


class ErrorBody(Wire):
    status: str = "error"
    message: str
    errors: list[FieldError] | None = None


class CrmErrorBody(Wire):
    """The error body of the reference CRM (/crm)."""

    error: str
    message: str


class ApiError(Exception):
    status_code = 500
    default_message = "Internal error"

    def __init__(
        self,
        message: str | None = None,
        errors: list[FieldError] | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        self.message = message or self.default_message
        self.errors = errors
        self.headers = headers or {}
        super().__init__(self.message)

    def response(self) -> Response:
        if self.errors is None:  # `errors` appears only on validation errors
            payload = encode({"status": "error", "message": self.message})
        else:
            payload = encode(ErrorBody(message=self.message, errors=self.errors))
        return Response(payload, self.status_code, self.headers, "application/json")


class BadRequest(ApiError):
    status_code = 400
    default_message = "Invalid request"

    @classmethod
    def field(cls, field: str, message: str) -> BadRequest:
        return cls(
            f"{field}: {message}" if field else message, [FieldError(field=field, message=message)]
        )


class Unauthorized(ApiError):
    status_code = 401
    default_message = "Missing or invalid API key"


class Forbidden(ApiError):
    status_code = 403
    default_message = "API key lacks the required scope"


class NotFound(ApiError):
    status_code = 404
    default_message = "Not found"


class Conflict(ApiError):
    status_code = 409
    default_message = "Conflict"


class PayloadTooLarge(ApiError):
    status_code = 413
    default_message = "Request body too large"


class RateLimited(ApiError):
    status_code = 429
    default_message = "Rate limit exceeded. Please retry after the specified time."


class CrmError(Exception):
    """An error of the reference CRM, answered as {"error", "message"}."""

    def __init__(self, status_code: int, error: str, message: str) -> None:
        self.status_code = status_code
        self.error = error
        self.message = message
        super().__init__(message)

    def response(self) -> Response:
        body = encode(CrmErrorBody(error=self.error, message=self.message))
        return Response(body, self.status_code, media_type="application/json")


async def api_error_handler(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, ApiError)
    return exc.response()


async def crm_error_handler(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, CrmError)
    return exc.response()


def refuse_control_target(field: str, url: str) -> None:
    """A 400 naming the reason when `url` would make the emulator call its own control API."""
    reason = control_api_target(url)
    if reason is not None:
        raise BadRequest.field(field, reason)


def surface_response(path: str, exc: ApiError, crm_code: str) -> Response:
    """`exc` in the error shape of the surface `path` belongs to (/crm has its own body)."""
    if path == "/crm" or path.startswith("/crm/"):
        return CrmError(exc.status_code, crm_code, exc.message).response()
    return exc.response()
