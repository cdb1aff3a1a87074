"""The one masking rule: secret names, URL userinfo and secret query values, the host kept visible."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from workbench.masking.envvars import masked_names, record_env
from workbench.masking.rule import MASK, PART_MASK, mask_text, mask_value, secret_name, secret_parts
from workbench.masking.scrub import Scrubber, env_secret_values, scrub_pairs


@pytest.mark.parametrize(
    "text, want",
    [
        ("https://user:pass@host.example.com/repo", "https://***@host.example.com/repo"),
        ("http://proxyuser:pw@proxy:3128", "http://***@proxy:3128"),
        ("https://ghp_tokenonly@github.com/x.git", "https://***@github.com/x.git"),
        ("https://u:p@ss@host/", "https://***@host/"),  # an unescaped @ in the password
        ("https://host/d?token=abc123&page=2", "https://host/d?token=***&page=2"),
        (
            "https://b.s3.amazonaws.com/k?X-Amz-Credential=AKIA1%2F2&X-Amz-Signature=deadbeef&X-Amz-Date=2025",
            "https://b.s3.amazonaws.com/k?X-Amz-Credential=***&X-Amz-Signature=***&X-Amz-Date=2025",
        ),
        (
            "https://acct.blob.core.windows.net/c/b?sv=2022&sig=Zm9v%3D&se=2030",
            "https://acct.blob.core.windows.net/c/b?sv=2022&sig=***&se=2030",
        ),
        (
            "x?access_key=AK1&secret=S2&password=p3&key=k4&apikey=a5&api_key=a6",
            "x?access_key=***&secret=***&password=***&key=***&apikey=***&api_key=***",
        ),
        (
            "pip install --index-url https://me:s3cr3t@pypi.example/simple pkg",
            "pip install --index-url https://***@pypi.example/simple pkg",
        ),
    ],
)
def test_url_credentials_and_secret_query_values_are_masked_keeping_the_host(text, want):
    assert mask_text(text) == want


@pytest.mark.parametrize(
    "text",
    [
        "https://host.example.com/path?page=2&keyword=lr&tokens=5x",  # keyword, tokens: not secrets
        "/usr/local/Ascend/ascend-toolkit/latest:/opt/lib",
        "epoch 3 step 10 loss 0.25",
        "user@example.com wrote: a:b@c",  # no scheme://, no URL userinfo
        "url=http://x",
    ],
)
def test_ordinary_text_is_left_alone(text):
    assert mask_text(text) == text


def test_assignments_and_urls_together():
    text = "export MS_SECRET_TOKEN=hunter2 HTTPS_PROXY=http://u:pw@proxy:3128 GLOG_v=3"
    assert mask_text(text) == "export MS_SECRET_TOKEN=%s HTTPS_PROXY=http://***@proxy:3128 GLOG_v=3" % MASK
    assert mask_text(mask_text(text)) == mask_text(text)  # masking twice changes nothing


def test_mask_value_by_name_then_by_content():
    assert mask_value("HF_TOKEN", "hf_abc") == MASK
    assert mask_value("MS_MIRROR", "https://a:b@m.example/x?sig=1") == "https://***@m.example/x?sig=***"
    assert mask_value("MS_MIRROR", None) is None and mask_value("MS_API_TOKEN", "") == ""
    assert mask_value(None, "http://u:p@h") == "http://***@h"
    assert mask_value("PATH", "/bin") == "/bin"


def test_record_env_masks_values_in_place_and_says_which():
    env = {
        "MS_MIRROR": "https://mirror:pw-9f8e@mirror.example.com/ms?token=tok-1234",
        "PATH": "/bin",
        "ASCEND_API_KEY": "k-1",
        "HTTPS_PROXY": "http://u:p@proxy:3128",
    }
    assert record_env(env) == {
        "ASCEND_API_KEY": MASK,
        "MS_MIRROR": "https://***@mirror.example.com/ms?token=***",
        "PATH": "/bin",
    }
    assert masked_names(env) == ["ASCEND_API_KEY", "MS_MIRROR"]


def test_secret_parts_are_the_passwords_and_values_not_the_user_names():
    assert secret_parts("ssh://ubuntu@host and https://me:pw-123456@h/x?token=tok-abcdef&a=1 PASSWORD=p4ss") == [
        "pw-123456",
        "tok-abcdef",
        "p4ss",
    ]


def test_a_url_password_learned_in_one_file_is_masked_bare_in_another():
    events = b'{"type":"check","evidence":{"MS_MIRROR":"https://mirror:mirror-pw-77@m.example/x"}}\n'
    log = b"retrying with password mirror-pw-77\n"
    scrubber = scrub_pairs([("events.jsonl", events), ("stderr.log", log)], environ={})
    assert scrubber.file("stderr.log", log) == ("retrying with password %s\n" % MASK).encode()
    line = json.loads(scrubber.file("events.jsonl", events))
    assert line["evidence"]["MS_MIRROR"] == "https://%s@m.example/x" % PART_MASK


def test_the_exporting_environment_gives_up_its_url_passwords():
    values = env_secret_values(
        {
            "HTTPS_PROXY": "http://proxyuser:proxy-pw-42@proxy:3128",
            "HOME": "/root",
            "MY_TOKEN": "tok-abcdef",
            "SSH_URL": "ssh://ubuntu@host",
        }
    )
    assert values == {"proxy-pw-42", "tok-abcdef"}


def test_one_walker_masks_the_same_way_for_files_and_for_the_report():
    value = {
        "argv": ["--set", "train.parallel.master_addr=https://u:cfg-pw-99@h.example?access_key=AK-777777"],
        "api_token": "tok-12345678",
        "nested": [{"password": "pw"}],
        "env": {"PATH": "/bin", "HOME": "/root"},
    }
    scrubber = Scrubber()
    for masked in (scrubber.obj(value), scrubber.report_obj(value)):
        assert masked["argv"][1] == "train.parallel.master_addr=https://***@h.example?access_key=***"
        assert masked["api_token"] == MASK and masked["nested"] == [{"password": MASK}]
    assert scrubber.obj(value)["env"] == {"PATH": "/bin", "HOME": "/root"}
    assert scrubber.report_obj(value)["env"] == {"PATH": "/bin"}  # the report cuts env mappings to the allow-list


def _plain_as_joined(scrubber, data: bytes, outside: bytes) -> bool:
    """Scrubber._plain_text as it was: the bytes outside strings joined, then anything not `outside` looked for."""
    if b"\\" in data:
        return False
    parts = data.split(b'"')
    if len(parts) % 2 == 0 or b"".join(parts[0::2]).translate(None, outside):
        return False
    tokens = [t.decode("utf-8", "replace") for t in set(parts[1::2])]
    return all("\n" not in t and not secret_name(t) and not secret_parts(t) and scrubber.text(t) == t for t in tokens)


@settings(max_examples=500, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            [
                b'{"type":"steps","loss":[0.5,1e-05],"phase":"steady"}\n',
                b'"',
                b'"name"',
                b"a",
                b"x",
                b"null",
                b" ",
                b'"token=abc"',
                b'"api_key"',
                b"\n",
                b",",
                b"1.5",
                b'"\xc3\xa9"',
                b'"a\nb"',
                b"true",
                b"{}",
            ]
        ),
        max_size=16,
    ).map(b"".join)
)
def test_a_block_is_plain_as_when_the_bytes_outside_strings_were_joined(data):
    """plain_block counts the bytes outside strings instead of joining them: the same answer for any block."""
    from workbench.masking.scrub import OUTSIDE_BYTES

    scrubber = Scrubber()
    assert scrubber.plain_block(data) == _plain_as_joined(scrubber, data, OUTSIDE_BYTES + b"\n")
