"""docs/sandbox.md lists exactly the APIs and versions the sandbox serves, and what it does not."""

from __future__ import annotations

from pathlib import Path

from kafka_shell.sandbox import apis

DOC = Path(__file__).resolve().parents[2] / "docs" / "sandbox.md"


def test_api_tables_match_what_the_listeners_serve():
    section = DOC.read_text().split(apis.DOC_START)[1].split(apis.DOC_END)[0]
    assert section == apis.doc_section(), "regenerate the tables in docs/sandbox.md: python -m kafka_shell.sandbox.apis"


def test_the_sandboxs_own_config_keys_and_defaults_are_listed():
    from kafka_shell.sandbox import configs
    text = DOC.read_text()
    for key in [*configs.SANDBOX_BROKER_CONFIGS, *configs.SANDBOX_DEFAULTS]:
        assert f"| `{key}` |" in text, key
