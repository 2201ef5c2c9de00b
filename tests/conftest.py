"""The test session's parsed-trace cache is its own (a temporary directory, removed at the
end): tests never read entries a user's runs left, and leave none in ``~/.cache``."""

from __future__ import annotations

import os
import shutil
import tempfile

import pytest


@pytest.fixture(scope="session", autouse=True)
def _own_trace_cache():
    where = tempfile.mkdtemp(prefix="hpcdispatch-test-traces-")
    before = os.environ.get("HPCDISPATCH_TRACE_CACHE")
    os.environ["HPCDISPATCH_TRACE_CACHE"] = where  # (subprocesses inherit it)
    yield
    if before is None:
        os.environ.pop("HPCDISPATCH_TRACE_CACHE", None)
    else:
        os.environ["HPCDISPATCH_TRACE_CACHE"] = before
    shutil.rmtree(where, ignore_errors=True)
