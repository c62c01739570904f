import time
import unittest
import uuid

from memorychat import Memorychat, MemorychatError

from .service import BASE_URL, as_admin, as_user, new_user


class GdprTest(unittest.TestCase):
    def test_when_a_user_exports_then_erases_then_the_export_has_their_sessions_and_nothing_is_left(self) -> None:
        user = new_user()
        client = as_user(user)
        client.store_turn("Revenue in 2024?", "1 M.")
        exported = client.export_my_data()
        self.assertEqual(exported["format"], "memorychat-export/1")
        self.assertEqual(exported["user_id"], user)
        self.assertEqual(len(exported["sessions"]), 1)

        accepted = client.erase_my_data()
        deadline = time.monotonic() + 60
        while client.gdpr_request(accepted["request_id"])["status"] not in ("completed", "failed"):
            self.assertLess(time.monotonic(), deadline)
            time.sleep(0.2)
        self.assertEqual(client.sessions()["sessions"], [])


class ApiKeyTest(unittest.TestCase):
    def setUp(self) -> None:
        self.tenant = f"tenant-{uuid.uuid4().hex[:8]}"
        self.admin = as_admin(self.tenant)

    def test_when_a_bot_acts_for_a_user_of_its_namespace_then_memory_is_theirs_and_apart_from_the_jwt_user(self) -> None:
        created = self.admin.create_api_key("telegram-bot", act_for_users=True, user_namespace="tg:")
        self.assertEqual(created["user_namespace"], "tg:")
        bot = Memorychat(BASE_URL, api_key=created["api_key"])
        user = new_user("tg:")
        first = bot.for_user(user).ask("Show me total sales by region for 2024", session_key="chat-7")
        follow_up = bot.for_user(user).ask("What about 2023?", session_key="chat-7")
        self.assertEqual(follow_up["conversation_metadata"]["conversation_id"], first["conversation_metadata"]["conversation_id"])
        self.assertEqual(follow_up["memory_context_used"]["history_messages_count"], 1)
        # The JWT user of the same id is another user.
        self.assertEqual(as_user(user, tenant=self.tenant).sessions()["sessions"], [])
        # A user id beyond ASCII travels as UTF-8.
        accented = "tg:zoë-" + uuid.uuid4().hex[:6]
        bot.for_user(accented).store_turn("Hallo?", "Hallo.")
        self.assertEqual(len(bot.for_user(accented).sessions()["sessions"]), 1)
        # A user outside the namespace is refused with the problem's code.
        with self.assertRaises(MemorychatError) as caught:
            bot.for_user(new_user("slack:")).sessions()
        self.assertEqual((caught.exception.status, caught.exception.code), (403, "forbidden"))

        listed = self.admin.api_keys()["api_keys"]
        self.assertEqual([k["key_id"] for k in listed], [created["key_id"]])
        self.assertNotIn("api_key", listed[0])

    def test_when_the_key_is_revoked_or_lacks_the_permission_then_the_error_carries_the_code(self) -> None:
        own_memory = self.admin.create_api_key("no-users")
        with self.assertRaises(MemorychatError) as caught:
            Memorychat(BASE_URL, api_key=own_memory["api_key"], user="someone").sessions()
        self.assertEqual((caught.exception.status, caught.exception.code), (403, "forbidden"))

        created = self.admin.create_api_key("short-lived", act_for_users=True, user_namespace="py:")
        bot = Memorychat(BASE_URL, api_key=created["api_key"], user=new_user("py:"))
        bot.sessions()
        self.assertIsNotNone(self.admin.revoke_api_key(created["key_id"])["revoked_at"])
        with self.assertRaises(MemorychatError) as caught:
            bot.sessions()
        self.assertEqual((caught.exception.status, caught.exception.code), (401, "unauthorized"))


class AccountLinkTest(unittest.TestCase):
    def test_when_the_service_has_no_identity_provider_then_a_sign_in_link_is_refused_with_its_code(self) -> None:
        with self.assertRaises(MemorychatError) as caught:
            as_user(new_user()).start_account_link()
        self.assertEqual((caught.exception.status, caught.exception.code), (503, "account-linking-not-configured"))
