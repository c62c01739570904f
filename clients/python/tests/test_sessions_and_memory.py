import unittest

from memorychat import MemorychatError

from .service import as_user, new_user


class SessionsAndMemoryTest(unittest.TestCase):
    def setUp(self) -> None:
        self.client = as_user(new_user())

    def test_when_sessions_are_listed_renamed_cleared_and_deleted_then_each_call_says_so(self) -> None:
        reply = self.client.ask("Show me total sales by region for 2024", session_key="thread-1")
        session_id = reply["conversation_metadata"]["conversation_id"]
        listed = self.client.sessions(key="thread-1")
        self.assertEqual([s["session_id"] for s in listed["sessions"]], [session_id])
        self.assertEqual(self.client.rename_session(session_id, "Sales review")["session_name"], "Sales review")
        self.assertEqual(self.client.set_memory_scope(session_id, "session")["memory_scope"], "session")
        self.assertEqual(self.client.session(session_id)["memory_scope"], "session")
        self.assertIsNone(self.client.set_memory_scope(session_id, None).get("memory_scope"))
        session = self.client.session(session_id)
        self.assertEqual([t["question"] for t in session["turns"]], ["Show me total sales by region for 2024"])
        self.client.clear_session(session_id)
        self.assertEqual(self.client.session(session_id)["turns"], [])
        self.client.delete_session(session_id)
        with self.assertRaises(MemorychatError) as caught:
            self.client.session(session_id)
        self.assertEqual((caught.exception.status, caught.exception.code), (404, "session-not-found"))

    def test_when_a_bot_stores_turns_and_asks_for_context_then_its_llm_gets_the_history(self) -> None:
        started = self.client.store_turn("Total sales by region for 2024?", "EMEA 100, AMER 200.", sql_query="SELECT 1")
        session_id = started["session"]["session_id"]
        self.client.store_turn("And by product?", "Bikes 120.", session_id=session_id)
        context = self.client.context("And by country?", session_id=session_id, format="openai")
        self.assertEqual(
            [m["role"] for m in context["messages"]],
            ["user", "assistant", "user", "assistant"],
        )
        self.assertEqual(context["messages"][0]["content"], "Total sales by region for 2024?")
        found = self.client.search("sales by region")
        self.assertIn("Total sales by region for 2024?", [r["question"] for r in found["results"]])

    def test_when_turns_are_corrected_and_rated_then_the_session_shows_it(self) -> None:
        started = self.client.store_turn("Top customer?", "ACME.")
        session_id = started["session"]["session_id"]
        self.client.correct_turn(session_id, 1, answer="Globex.")
        self.client.rate_turn(session_id, 1, "up", "right")
        self.assertEqual(self.client.session(session_id)["turns"][0]["answer"], "Globex.")
        self.client.delete_turn(session_id, 1)
        self.assertEqual(self.client.session(session_id)["turns"], [])


class SqlRecallTest(unittest.TestCase):
    def test_when_a_follow_up_ran_sql_then_its_sql_and_csv_are_recalled(self) -> None:
        client = as_user(new_user())
        first = client.ask("Show me total sales by region for 2024")
        second = client.follow_up(first, "What about 2023?")
        session_id = second["conversation_metadata"]["conversation_id"]
        self.assertIn("year = 2023", client.turn_sql(session_id, "last")["sql_query"])
        self.assertIn("year = 2024", client.turn_sql(session_id, 1)["sql_query"])
        self.assertIn("year = 2024", client.find_sql(session_id, "2024")["sql_query"])
        csv = client.result_csv(session_id, "last")
        self.assertEqual(csv.splitlines()[0], "region,total_sales")
        self.assertIn("EMEA", csv)
