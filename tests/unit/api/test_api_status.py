"""``nrop.api.status``: the Status body both sides of the API share, and client-go's generic responses."""

from __future__ import annotations

import pytest

from nrop.api.status import Cause, Status, generic_server_response


def test_a_status_round_trips_through_its_body() -> None:
    status = Status(
        code=422,
        reason="Invalid",
        message='Pod "p" is invalid: spec.containers: Required value',
        name="p",
        kind="Pod",
        causes=(Cause("FieldValueRequired", "Required value", "spec.containers"),),
        retry_after=None,
    )
    body = status.to_dict()
    assert body == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": 'Pod "p" is invalid: spec.containers: Required value',
        "reason": "Invalid",
        "code": 422,
        "details": {
            "name": "p",
            "kind": "Pod",
            "causes": [
                {"reason": "FieldValueRequired", "message": "Required value", "field": "spec.containers"}
            ],
        },
    }
    assert Status.from_dict(body) == status


def test_a_status_without_details_has_none() -> None:
    assert "details" not in Status(404, "NotFound", 'pods "p" not found').to_dict()
    assert Status(429, "TooManyRequests", "slow", retry_after=0).to_dict()["details"] == {
        "retryAfterSeconds": 0
    }


@pytest.mark.parametrize(
    ("body", "http_status", "expected"),
    [
        pytest.param(
            {"code": 410, "reason": "Expired", "message": "too old"},
            0,
            (410, "Expired", "too old"),
            id="full",
        ),
        pytest.param({"message": "gone"}, 410, (410, "Unknown", "gone"), id="code-from-http"),
        pytest.param({}, 404, (404, "NotFound", "NotFound"), id="reason-from-code"),
        pytest.param({}, 0, (500, "InternalError", "InternalError"), id="nothing"),
    ],
)
def test_what_a_status_body_leaves_out(body: dict, http_status: int, expected: tuple[int, str, str]) -> None:
    status = Status.from_dict(body, http_status)
    assert (status.code, status.reason, status.message) == expected


@pytest.mark.parametrize(
    ("code", "verb", "server", "reason", "message"),
    [
        pytest.param(409, "POST", "x", "AlreadyExists", "the server reported a conflict", id="409-post"),
        pytest.param(409, "PUT", "x", "Conflict", "the server reported a conflict", id="409-put"),
        pytest.param(
            404, "GET", "x", "NotFound", "the server could not find the requested resource", id="404"
        ),
        pytest.param(403, "GET", "no way", "Forbidden", "no way", id="403-keeps-the-server-message"),
        pytest.param(
            422,
            "PATCH",
            "",
            "Invalid",
            "the server rejected our request due to an error in our request",
            id="422",
        ),
        pytest.param(
            504,
            "GET",
            "",
            "Timeout",
            "the server was unable to return a response in the time allotted, but may still be processing the request",
            id="504",
        ),
        pytest.param(
            503,
            "GET",
            "",
            "ServiceUnavailable",
            "the server is currently unable to handle the request",
            id="503",
        ),
        pytest.param(
            502,
            "GET",
            'say "hi"',
            "InternalError",
            'an error on the server ("say \\"hi\\"") has prevented the request from succeeding',
            id="5xx-quotes-as-go",
        ),
        pytest.param(
            418,
            "GET",
            "teapot",
            "Unknown",
            "the server responded with the status code 418 but did not return more information",
            id="other",
        ),
    ],
)
def test_generic_server_response(code: int, verb: str, server: str, reason: str, message: str) -> None:
    status = generic_server_response(code, verb, server)
    assert (status.code, status.reason, status.message) == (code, reason, message)
    assert status.causes == (Cause("UnexpectedServerResponse", server),)


def test_the_generic_response_names_what_was_requested() -> None:
    status = generic_server_response(404, "GET", "", "pods")
    assert status.message == "the server could not find the requested resource (get pods)"
