import contextlib
import io
import os
import pathlib
import unittest
import uuid
from unittest import mock

from .service import BASE_URL, as_admin

README = pathlib.Path(__file__).resolve().parent.parent / "README.md"


class ReadmeProgramTest(unittest.TestCase):
    def test_when_the_readme_program_runs_with_an_api_key_then_it_prints_both_answers_the_second_from_memory(self) -> None:
        program = README.read_text(encoding="utf-8").split("```python", 1)[1].split("```", 1)[0]
        self.assertLessEqual(len(program.strip().splitlines()), 20)
        key = as_admin(f"readme-{uuid.uuid4().hex[:8]}").create_api_key("readme-bot", act_for_users=True, user_namespace="chat:")["api_key"]
        out = io.StringIO()
        with mock.patch.dict(os.environ, {"MEMORYCHAT_URL": BASE_URL, "MEMORYCHAT_API_KEY": key}), contextlib.redirect_stdout(out):
            exec(compile(program, str(README), "exec"), {"__name__": "readme"})
        printed = out.getvalue()
        self.assertIn("Total sales by region for 2024", printed)
        self.assertIn("Total sales by region for 2023", printed)
        self.assertIn("SQL: SELECT region", printed)
