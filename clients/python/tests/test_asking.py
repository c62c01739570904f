import unittest

from memorychat import MemorychatError

from .service import as_user, new_user


class AskingTest(unittest.TestCase):
    def setUp(self) -> None:
        self.client = as_user(new_user())

    def test_when_a_user_asks_and_follows_up_then_the_follow_up_is_answered_from_memory(self) -> None:
        first = self.client.ask("Show me total sales by region for 2024")
        self.assertIn("2024", first["answer"])
        follow_up = self.client.follow_up(first, "What about 2023?")
        self.assertIn("2023", follow_up["answer"])
        self.assertEqual(follow_up["memory_context_used"]["history_messages_count"], 1)
        self.assertEqual(follow_up["conversation_metadata"]["conversation_id"], first["conversation_metadata"]["conversation_id"])

    def test_when_a_question_is_streamed_then_memory_answer_pieces_and_the_reply_arrive_in_order(self) -> None:
        first = self.client.ask("Show me total sales by region for 2024", session_key="thread-stream")
        events = list(self.client.stream("What about 2023?", session_key="thread-stream"))
        kinds = [e.event for e in events]
        self.assertEqual(kinds[0], "memory")
        self.assertEqual(kinds[-1], "reply")
        self.assertTrue(set(kinds[1:-1]) <= {"answer"} and len(kinds) >= 3, kinds)
        reply = events[-1].data
        self.assertEqual("".join(e.data["text"] for e in events if e.event == "answer"), reply["answer"])
        self.assertEqual(reply["conversation_metadata"]["conversation_id"], first["conversation_metadata"]["conversation_id"])
        self.assertIn("2023", reply["answer"])

    def test_when_the_request_is_invalid_then_a_memorychat_error_carries_the_code_and_field_errors(self) -> None:
        with self.assertRaises(MemorychatError) as caught:
            self.client.ask("")
        self.assertEqual((caught.exception.status, caught.exception.code), (400, "validation-failed"))
        self.assertTrue(caught.exception.errors and caught.exception.errors[0].field)

    def test_when_the_token_is_signed_with_another_secret_then_unauthorized(self) -> None:
        from memorychat import Memorychat, sign_jwt

        from .service import BASE_URL

        forged = Memorychat(BASE_URL, token=sign_jwt("x" * 40, "someone"))
        with self.assertRaises(MemorychatError) as caught:
            forged.sessions()
        self.assertEqual((caught.exception.status, caught.exception.code), (401, "unauthorized"))
