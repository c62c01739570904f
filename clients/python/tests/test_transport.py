import http.server
import json
import threading
import time
import unittest

from memorychat import Memorychat, MemorychatError


Answer = tuple[int, dict[str, str], bytes]


class _Recorder(http.server.BaseHTTPRequestHandler):
    """
    A local HTTP server answering each path as its test says (a list: one answer after the other, the
    last one from then on), recording every request it gets and when.
    """

    answers: dict[str, Answer | list[Answer]] = {}
    seen: list[tuple[str, str, dict[str, str]]] = []
    seen_at: list[float] = []

    def _answer(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        if length:
            self.rfile.read(length)
        type(self).seen.append((self.command, self.path, {k.lower(): v for k, v in self.headers.items()}))
        type(self).seen_at.append(time.monotonic())
        answer = type(self).answers.get(self.path.split("?")[0], (404, {}, b""))
        if isinstance(answer, list):
            answer = answer.pop(0) if len(answer) > 1 else answer[0]
        status, headers, body = answer
        self.send_response(status)
        for name, value in {"content-length": str(len(body)), **headers}.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = _answer

    def log_message(self, *_args) -> None:
        pass


def _server() -> tuple[http.server.ThreadingHTTPServer, type[_Recorder], str]:
    handler = type("Recorder", (_Recorder,), {"answers": {}, "seen": [], "seen_at": []})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, handler, f"http://127.0.0.1:{server.server_address[1]}"


class TransportTest(unittest.TestCase):
    """What the client does with what a service, a proxy or an impostor sends back (no service needed)."""

    def setUp(self) -> None:
        self.service, self.at_service, self.service_url = _server()
        self.elsewhere, self.at_elsewhere, self.elsewhere_url = _server()
        self.bot = Memorychat(self.service_url, api_key="mck.dGVuYW50.key.secret", user="slack:T1:U42")

    def tearDown(self) -> None:
        for server in (self.service, self.elsewhere):
            server.shutdown()
            server.server_close()

    def test_when_the_service_redirects_to_another_origin_then_the_call_is_refused_and_no_credential_goes_there(self) -> None:
        self.at_service.answers["/sessions"] = (302, {"location": f"{self.elsewhere_url}/collect"}, b"")
        with self.assertRaises(MemorychatError) as caught:
            self.bot.sessions()
        self.assertEqual((caught.exception.status, caught.exception.code), (302, "redirect-refused"))
        self.assertIn(self.elsewhere_url, caught.exception.detail)
        self.assertEqual(self.at_elsewhere.seen, [])
        # Another port of the same host is another origin too.
        self.assertNotEqual(self.service_url, self.elsewhere_url)

    def test_when_the_service_redirects_within_its_origin_then_the_call_follows_with_its_credentials(self) -> None:
        self.at_service.answers["/sessions"] = (302, {"location": "/v2/sessions"}, b"")
        self.at_service.answers["/v2/sessions"] = (200, {"content-type": "application/json"}, b'{"sessions": []}')
        self.assertEqual(self.bot.sessions(), {"sessions": []})
        self.assertEqual(self.at_service.seen[-1][2]["x-api-key"], "mck.dGVuYW50.key.secret")

    def test_when_a_reply_is_not_json_then_the_clients_own_error_is_raised_not_a_json_error(self) -> None:
        self.at_service.answers["/memoryChat"] = (200, {"content-type": "text/html"}, b"<html>proxy error</html>")
        with self.assertRaises(MemorychatError) as caught:
            self.bot.ask("Total sales for 2024?")
        self.assertEqual((caught.exception.status, caught.exception.code), (200, "invalid-response"))
        self.assertIn("<html>proxy error</html>", caught.exception.detail)

        self.at_service.answers["/sessions"] = (200, {"content-type": "application/json"}, b'{"sessions": \xff}')
        with self.assertRaises(MemorychatError) as caught:
            self.bot.sessions()
        self.assertEqual(caught.exception.code, "invalid-response")

        self.at_service.answers["/memoryChat"] = (200, {"content-type": "text/event-stream"}, b"event: memory\ndata: {not json\n\n")
        with self.assertRaises(MemorychatError) as caught:
            list(self.bot.stream("Total sales for 2024?"))
        self.assertEqual(caught.exception.code, "invalid-response")

    def test_when_a_call_names_the_users_denodo_credentials_then_they_go_as_x_upstream_authorization_of_that_call_only(self) -> None:
        self.at_service.answers["/memoryChat"] = (200, {"content-type": "application/json"}, json.dumps({"answer": "ok"}).encode())
        self.bot.ask("Total sales for 2024?", upstream_authorization="Basic YW5hOnB3")
        self.bot.ask("And 2023?")
        sent = [headers for method, path, headers in self.at_service.seen if path == "/memoryChat"]
        self.assertEqual(sent[0]["x-upstream-authorization"], "Basic YW5hOnB3")
        self.assertNotIn("x-upstream-authorization", sent[1])

    def test_when_an_export_is_polled_then_the_polls_keep_to_retry_after_and_a_429_is_waited_out_not_raised(self) -> None:
        as_json = {"content-type": "application/json"}
        status = {"request_id": "r1", "status_url": "/gdpr/requests/r1"}
        refused = json.dumps({"status": 429, "code": "rate-limited", "title": "Too many", "detail": "retry in 1 second"}).encode()
        self.at_service.answers["/me/export"] = (202, {**as_json, "retry-after": "1"}, json.dumps({**status, "status": "queued"}).encode())
        self.at_service.answers["/gdpr/requests/r1"] = [
            (429, {"content-type": "application/problem+json", "retry-after": "1"}, refused),
            (200, as_json, json.dumps({**status, "status": "completed"}).encode()),
        ]
        self.at_service.answers["/gdpr/requests/r1/download"] = (200, as_json, b'{"sessions": []}')

        self.assertEqual(self.bot.export_my_data(poll_s=0.0, timeout_s=30), {"sessions": []})
        paths = [path for _method, path, _headers in self.at_service.seen]
        self.assertEqual(paths, ["/me/export", "/gdpr/requests/r1", "/gdpr/requests/r1", "/gdpr/requests/r1/download"])
        # Each wait is the second its reply's Retry-After named, though poll_s asked for none.
        gaps = [later - earlier for earlier, later in zip(self.at_service.seen_at, self.at_service.seen_at[1:])]
        self.assertGreaterEqual(min(gaps[:2]), 1.0)

    def test_when_a_call_is_refused_429_then_the_error_carries_its_retry_after(self) -> None:
        refused = json.dumps({"status": 429, "code": "rate-limited", "title": "Too many", "detail": "retry in 7 seconds"}).encode()
        self.at_service.answers["/sessions"] = (429, {"content-type": "application/problem+json", "retry-after": "7"}, refused)
        with self.assertRaises(MemorychatError) as caught:
            self.bot.sessions()
        self.assertEqual((caught.exception.code, caught.exception.retry_after_s), ("rate-limited", 7.0))
