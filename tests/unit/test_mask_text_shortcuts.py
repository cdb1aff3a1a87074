"""mask_text skips a pattern only where it cannot match: the result is the one every pattern run in turn gives."""

from hypothesis import given, settings
from hypothesis import strategies as st

from workbench.masking import rule as R

PIECES = [
    "Authorization: ",
    "proxy-authorisation=",
    "AUTHORIZATION: ",
    "authorıza",  # dotless i, which (?i) matches to i
    "tion: ",
    "Bearer ",
    "bearer ",
    "eyJhbGciOiJIUzI1NiJ9",
    "Basic ",
    "mysql",
    "mariadb ",
    "sshpass",
    " -p",
    "-pS3cret",
    " --password ",
    " -token=",
    "api_key=",
    "train-001,",
    "1,2,3,2.3229987621307373,3.29,64,steady,0\n",
    "'",
    '"',
    "=",
    ":",
    " ",
    "\t",
    "\n",
    "?q=1&secret=x",
    "https://user:pw@host/",
    "1e-05,",
    "-x ",
    "--",
    "a=b",
    "key: v",
    "ſ",
    "K",
    "İ",
]


def every_pattern(text: str) -> str:
    """mask_text as it was: every pattern over the whole text."""
    if not text or not any(n in text for n in R.NEEDLES):
        return text
    if "://" in text:
        text = R._mask_userinfo(text)
    text = R.AUTH_HEADER.sub(R._auth_header, text)
    text = R.BEARER.sub(R._bearer, text)
    text = R.QUERY_PARAM.sub(R._query, text)
    if "'" in text or '"' in text:
        text = R.QUOTED_PAIR.sub(R._quoted_pair, text)
    if "-" in text:
        text = R.OPTION.sub(R._option, text)
        text = R.GLUED_P.sub(R._glued_p, text)
    return R.ASSIGNMENT.sub(R._assignment, text)


@settings(max_examples=600, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=14).map("".join))
def test_the_shortcuts_change_nothing(text):
    assert R.mask_text(text) == every_pattern(text)


def test_a_header_a_token_and_a_glued_password_are_still_masked():
    text = "Authorization: Bearer abcdefgh12345678 and mysql -u me -pS3cretValue"
    masked = R.mask_text(text)
    assert "abcdefgh12345678" not in masked and "S3cretValue" not in masked and masked == every_pattern(text)


def every_pattern_ungated(text: str) -> str:
    """Every pattern of mask_text over the whole text, none skipped."""
    text = R._mask_userinfo(text)
    for pattern, replace in (
        (R.AUTH_HEADER, R._auth_header),
        (R.BEARER, R._bearer),
        (R.QUERY_PARAM, R._query),
        (R.QUOTED_PAIR, R._quoted_pair),
        (R.OPTION, R._option),
        (R.GLUED_P, R._glued_p),
        (R.ASSIGNMENT, R._assignment),
    ):
        text = pattern.sub(replace, text)
    return text


RULE_CHARS = "".join(c.decode("ascii") for c in R.RULE_BYTES)
WITHOUT_RULE_CHARS = [p.translate({ord(c): None for c in RULE_CHARS}) for p in PIECES]


@settings(max_examples=600, deadline=None)
@given(
    st.lists(
        st.sampled_from(WITHOUT_RULE_CHARS)
        | st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters=RULE_CHARS), max_size=8),
        max_size=14,
    ).map("".join)
)
def test_a_text_without_the_rule_characters_is_what_no_pattern_changes(text):
    """maskable's claim, against the patterns themselves: none of them changes a text holding none of RULE_BYTES."""
    assert not R.maskable(text.encode("utf-8"))
    assert every_pattern_ungated(text) == text


def test_each_rule_character_is_needed_by_some_masked_text():
    """Without RULE_BYTES' characters nothing is masked; with each one something is (no character is there for
    nothing, none is missing from the examples' point of view)."""
    for text in ("api_key=S3cretValue1", "password: S3cretValue1", "--password S3cretValue1", "-token\tS3cretValue1"):
        assert R.maskable(text.encode("utf-8")) and R.mask_text(text) != text
