# SPDX-License-Identifier: Apache-2.0
# Hostile tests use tests/integration's harness (targets.py, jupyter_ws.py) as they are, and its
# report hook (a failed test's report carries the gateway's log).
import importlib.util
import os
import sys

_here = os.path.dirname(os.path.abspath(__file__))
_integration = os.path.join(_here, "..", "integration")
sys.path.insert(0, _integration)
sys.path.insert(0, _here)

_spec = importlib.util.spec_from_file_location("integration_conftest", os.path.join(_integration, "conftest.py"))
_integration_conftest = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_integration_conftest)
pytest_runtest_makereport = _integration_conftest.pytest_runtest_makereport
