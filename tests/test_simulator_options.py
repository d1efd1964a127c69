"""The simulator's fault options: a value of the wrong shape is refused with the shape its
option asks for."""

from __future__ import annotations

import pytest

from lyra_crawl.simulator.__main__ import build_parser


@pytest.mark.parametrize(
    ("option", "value", "shape"),
    [
        ("--captcha-at", "mojeek", "ENGINE:PAGE"),
        ("--status-at", "mojeek:2", "ENGINE:PAGE:CODE"),
        ("--slow-at", "mojeek:2:x", "ENGINE:PAGE:MS"),
        ("--other-status", "openalex:1:2", "ENGINE:CODE"),
        ("--replica-lag", "wikipedia:soon", "ENGINE:SECONDS"),
        ("--replica-lag", "nowhere:5", "ENGINE:SECONDS"),
    ],
)
def test_a_fault_option_of_the_wrong_shape_names_the_shape_it_asks_for(
    capsys, option, value, shape
) -> None:
    with pytest.raises(SystemExit):
        build_parser().parse_args([option, value])

    error = capsys.readouterr().err
    assert f"argument {option}: expected {shape} with ENGINE one of" in error
    assert f"(got {value!r})" in error


def test_a_fault_option_of_the_right_shape_gives_the_engine_and_its_numbers() -> None:
    options = build_parser().parse_args(
        ["--replica-lag", "wikipedia:7", "--status-at", "mojeek:2:429", "--captcha-at", "bing:3"]
    )

    assert options.replica_lag == [("wikipedia", "7")]
    assert options.status_at == [("mojeek", "2", "429")]
    assert options.captcha_at == [("bing", "3")]


def test_a_challenge_page_is_read_when_the_simulator_starts(tmp_path, capsys) -> None:
    page = tmp_path / "challenge.html"
    page.write_bytes(b"<form action='/captcha'></form>")

    options = build_parser().parse_args(["--challenge-page", f"brave={page}"])
    assert options.challenge_page == [("brave", b"<form action='/captcha'></form>")]

    for value, said in [
        (f"brave={tmp_path / 'missing.html'}", "cannot read"),
        (f"nowhere={page}", "expected ENGINE=FILE with ENGINE one of"),
    ]:
        with pytest.raises(SystemExit):
            build_parser().parse_args(["--challenge-page", value])
        assert said in capsys.readouterr().err
