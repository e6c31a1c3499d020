"""``courtly.errors.sole_error``: the error raised in place of a task group's."""

from __future__ import annotations

from courtly.errors import ConfigError, StateError, sole_error


def test_a_group_of_one_is_its_error_however_deep() -> None:
    error = StateError("unreadable")
    assert sole_error(ExceptionGroup("g", [error])) is error
    assert sole_error(ExceptionGroup("g", [ExceptionGroup("inner", [error])])) is error
    other = RuntimeError("unexpected")
    assert sole_error(ExceptionGroup("g", [other])) is other  # its own traceback kept


def test_of_several_the_first_courtly_error_then_the_first_os_error() -> None:
    first, second = ConfigError("a"), StateError("b")
    disk = OSError(28, "No space left on device")
    assert sole_error(ExceptionGroup("g", [ValueError(), disk, first, second])) is first
    assert sole_error(ExceptionGroup("g", [ValueError(), ExceptionGroup("i", [disk])])) is disk


def test_several_unexpected_errors_stay_a_group() -> None:
    group = ExceptionGroup("g", [ValueError(), KeyError()])
    assert sole_error(group) is group
