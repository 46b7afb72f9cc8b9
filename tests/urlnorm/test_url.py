import threading
from collections.abc import Callable

import pytest
from hypothesis import given
from hypothesis import strategies as st
from w3lib.url import safe_url_string

from scrapy_templates.urlnorm.url import UrlKeys, is_authority_key, split_url, to_url


def test_keys_of_a_typical_url() -> None:
    keys = split_url("https://u@www.example.com:8080/a/show.php;jsessionid=9?id=10&sid=x&flag#top")
    assert keys.as_dict() == {
        "scheme": "https",
        "user": "u",
        "host_0": "www",
        "host_1": "example",
        "host_2": "com",
        "port": "8080",
        "path_0": "a",
        "path_1": "show",
        "ext": "php",
        ";jsessionid": "9",
        "?id": "10",
        "?sid": "x",
        "?flag": None,
        "#": "top",
    }


def test_trailing_slash_is_an_empty_last_segment() -> None:
    assert split_url("http://h/a/").as_dict()["path_1"] == ""
    assert "path_1" not in split_url("http://h/a").as_dict()


def test_repeated_names_get_occurrence_keys() -> None:
    keys = [k for k, _ in split_url("http://h/?t=1&t=2&t")]
    assert keys[-3:] == ["?t", "?t&2", "?t&3"]
    assert to_url(split_url("http://h/?t=1&t=2&t")) == "http://h/?t=1&t=2&t"


def test_a_query_separated_by_semicolons_has_one_key_per_parameter() -> None:
    url = "http://h/gitweb.cgi?p=project.git;a=blob;f=a.py;f=b.py"
    keys = split_url(url).as_dict()
    assert keys["qsep"] == ";"
    assert keys["?p"] == "project.git" and keys["?a"] == "blob"
    assert keys["?f"] == "a.py" and keys["?f&2"] == "b.py"
    assert to_url(split_url(url)) == url
    without_file = [(k, v) for k, v in split_url(url) if not k.startswith("?f")]
    assert to_url(without_file) == "http://h/gitweb.cgi?p=project.git;a=blob"


@pytest.mark.parametrize("query", ["q=a;b", "a=1;b=2&c=3", "a=1", ";"])
def test_a_semicolon_inside_a_value_or_beside_an_ampersand_separates_nothing(query: str) -> None:
    keys = split_url(f"http://h/?{query}").as_dict()
    assert "qsep" not in keys
    assert len([k for k in keys if k.startswith("?")]) == query.count("&") + 1


def test_only_a_semicolon_separates_a_query() -> None:
    with pytest.raises(ValueError, match="separator"):
        to_url([("path_0", "x"), ("qsep", "|"), ("?a", "1")])


def test_ipv6_host_and_port() -> None:
    keys = split_url("http://[::1]:8000/x").as_dict()
    assert keys["host_0"] == "[::1]"
    assert keys["port"] == "8000"


def test_authority_keys() -> None:
    assert is_authority_key("host_3") and is_authority_key("scheme") and is_authority_key("port")
    assert not is_authority_key("path_0") and not is_authority_key("?host_0")


def test_unknown_key_is_refused() -> None:
    try:
        to_url([("bogus", "x")])
    except ValueError as exc:
        assert "bogus" in str(exc)
    else:
        raise AssertionError("unknown key accepted")


_delims = st.sampled_from([*list(":/?#[]@!$&'()*+,;=%.-_~"), "a", "b", "1", "é", " ", "\n"])
_text = st.lists(_delims, max_size=40).map("".join)


@given(_text)
def test_any_string_round_trips(text: str) -> None:
    assert to_url(split_url(text)) == text


@given(
    st.sampled_from(["http", "https"]),
    st.lists(st.from_regex(r"[a-z0-9-]{1,8}", fullmatch=True), min_size=1, max_size=4),
    _text,
)
def test_every_url_w3lib_accepts_round_trips(scheme: str, labels: list[str], rest: str) -> None:
    url = safe_url_string(f"{scheme}://{'.'.join(labels)}/{rest}")
    assert to_url(split_url(url)) == url
    assert to_url(split_url(url).pairs) == url


def _within(seconds: float, work: Callable[[], object]) -> list[object]:
    """``[work()]`` when it ends within ``seconds``, else ``[]``: a guard against a hang, not a
    timing (the URLs below take milliseconds when the split is linear and hours when it is
    quadratic)."""
    found: list[object] = []
    done = threading.Event()

    def run() -> None:
        found.append(work())
        done.set()

    threading.Thread(target=run, daemon=True).start()
    done.wait(seconds)
    return found


@pytest.mark.parametrize(
    "url",
    [
        "http://h/a;" + ";" * 100_000,
        "http://h/page?" + "&" * 100_000,
        "http://h/page?" + "&".join(["tag=x"] * 30_000),
        "http://h/a;" + ";".join(["v"] * 30_000) + "?" + "&".join(["k"] * 30_000),
    ],
    ids=["semicolons", "ampersands", "one-name-repeated", "both"],
)
def test_a_long_url_of_repeated_names_splits_in_linear_time(url: str) -> None:
    found = _within(20.0, lambda: split_url(url))
    assert found, "the split did not end"
    keys = found[0]
    assert isinstance(keys, UrlKeys)
    assert len(keys.as_dict()) == len(keys.pairs)  # every key unique
    assert to_url(keys) == url
