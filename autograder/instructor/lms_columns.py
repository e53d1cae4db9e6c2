"""The identity columns of an LMS's CSV files, read one way everywhere.

``export --ids MAPPING.csv`` (who is who in the grade sheet) and ``class-server ROSTER.csv``
(whose API key is whose) read the same headers: a column is known by its name lowercased, every
run of other characters made ``_`` (so Canvas's "SIS Login ID" is ``sis_login_id`` and Moodle's
"Email address" is ``email``), with a few spellings of one field mapped to its name.
"""
from __future__ import annotations

import re

FIELDS = ("name", "first_name", "last_name", "id", "sis_user_id", "sis_login_id", "section",
          "email", "username", "idnumber")
ALIASES = {"student": "name", "email_address": "email", "id_number": "idnumber",
           "firstname": "first_name", "lastname": "last_name", "surname": "last_name"}
KEYS = ("id", "sis_user_id", "sis_login_id", "email", "username", "idnumber")  # one person each


def field(header: str) -> str:
    """The field a CSV header names (``"SIS Login ID"`` -> ``"sis_login_id"``)."""
    key = re.sub(r"[^a-z0-9]+", "_", header.strip().lower()).strip("_")
    return ALIASES.get(key, key)
