"""The environment allow-list and masking rule shared by every record."""

from __future__ import annotations

import pytest

from workbench.masking.envvars import MASK, allowed_name, masked_names, record_env, secret_name


@pytest.mark.parametrize(
    "name",
    [
        "MS_API_TOKEN",
        "ASCEND_PASSWORD",
        "MS_SECRET",
        "GLOG_auth",
        "MS_apiKey",
        "ASCEND_API_KEY",
        "MS_CREDENTIALS",
        "MS_COOKIE",
    ],
)
def test_secret_like_names(name):
    assert secret_name(name)


@pytest.mark.parametrize(
    "name",
    [
        "PATH",
        "ASCEND_HOME_PATH",
        "MS_ROLE",
        "GLOG_v",
        "MS_TOKEN_COUNT",
        "MS_KEY_PATH",
        "KEY",
        "MS_WORKBENCH_SESSIONS",
        "ASCEND_RT_VISIBLE_DEVICES",
        "MS_AUTH_URL",
    ],
)
def test_ordinary_names(name):
    assert not secret_name(name)


def test_allow_list():
    assert all(allowed_name(n) for n in ("PATH", "LD_LIBRARY_PATH", "PYTHONPATH", "ASCEND_X", "GLOG_v", "MS_ROLE"))
    assert not any(allowed_name(n) for n in ("HOME", "AWS_SECRET_ACCESS_KEY", "PATHX", "HF_TOKEN", "ms_role"))


def test_record_env_keeps_allowed_names_and_masks_secret_values():
    env = {
        "PATH": "/bin",
        "MS_API_TOKEN": "abc123",
        "HF_TOKEN": "hf_x",
        "HOME": "/root",
        "MS_ROLE": "MS_WORKER",
        "MS_EMPTY_SECRET": "",
    }
    assert record_env(env) == {"MS_API_TOKEN": MASK, "MS_EMPTY_SECRET": "", "MS_ROLE": "MS_WORKER", "PATH": "/bin"}
    assert list(record_env(env)) == sorted(record_env(env))
    assert masked_names(env) == ["MS_API_TOKEN"]
    assert record_env(None) == {}
