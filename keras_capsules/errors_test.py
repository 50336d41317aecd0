"""The shared argument checks: every integral type is an integer, bools and floats are not; whole-number labels in range; kernel fits."""

import json

import numpy as np
import pytest

from keras_capsules import errors

INTEGRAL = [3, np.int64(3), np.int32(3), np.uint8(3), np.int16(3)]


@pytest.mark.parametrize("value", INTEGRAL, ids=lambda v: type(v).__name__)
def test_every_integral_type_is_an_integer_and_comes_back_as_a_python_int(value):
    assert errors.is_integer(value) and errors.is_number(value)
    checked = errors.check_positive_int("Owner", "size", value)
    assert type(checked) is int and checked == 3
    assert json.dumps({"size": checked}) == '{"size": 3}'


@pytest.mark.parametrize("value", [True, np.bool_(True), 2.0, 2.5, np.float32(2.0), "2", None], ids=repr)
def test_bools_floats_and_strings_are_not_integers(value):
    assert not errors.is_integer(value)
    with pytest.raises(TypeError, match=r"Owner: argument `size` expected an integer >= 1, received"):
        errors.check_positive_int("Owner", "size", value)


def test_numbers_accept_numpy_scalars_and_refuse_bools():
    assert all(errors.is_number(v) for v in (0, 0.5, np.int64(0), np.uint8(1), np.float32(0.5)))
    assert not any(errors.is_number(v) for v in (True, np.bool_(False), "1", None, [1]))


def test_whole_labels_pass_and_fractional_ones_are_named():
    for labels in (
        [0, 1, 2],
        np.array([0.0, 2.0, 9.0]),
        np.array([[1.0], [3.0]], "float32"),
        np.array([1, 2], np.uint8),
    ):
        assert errors.check_whole_labels("f", "y", labels) is labels
    with pytest.raises(
        ValueError,
        match=r"f: argument `y` expected class indices that are whole numbers .*received '2 non-integral label\(s\) such as 2\.7'",
    ):
        errors.check_whole_labels("f", "y", np.array([0.0, 2.7, 1.0, 3.5]))
    for bad in (np.nan, np.inf):
        with pytest.raises(ValueError, match=r"1 non-integral label\(s\) such as (nan|inf)"):
            errors.check_whole_labels("f", "y", np.array([1.0, bad]))


def test_label_range_names_how_many_labels_and_a_few_values():
    for labels, classes in (([0, 9, 3], 10), (np.array([[9.0], [0.0]]), 10), (np.array([40, 0], np.uint8), None)):
        assert errors.check_label_range("f", "y", labels, classes) is labels
    with pytest.raises(
        ValueError,
        match=r"f: argument `y` expected class indices in 0\.\.9 \(10 classes\), received '8 of 9 label\(s\), values 10, 11, 12, 13, 14, \.\.\.'\.",
    ):
        errors.check_label_range("f", "y", np.array([10, 11, 12, 13, 14, 15, 16, 17, 9]), 10)
    with pytest.raises(ValueError, match=r"received '3 of 4 label\(s\), values -1, 10'\."):
        errors.check_label_range("f", "y", [-1, 10, -1, 0], 10)
    with pytest.raises(
        ValueError, match=r"f: argument `y` expected class indices >= 0, received '1 of 2 label\(s\), values -2'\."
    ):
        errors.check_label_range("f", "y", np.array([[-2], [700]]))
    assert errors.labels_outside(np.array([[3], [-1], [5]]), 5).tolist() == [-1, 5]


def test_kernel_fits_names_the_kernel_and_the_input_size():
    errors.check_kernel_fits("L", 5, "valid", (None, 5, 7, 3))
    errors.check_kernel_fits("L", 9, "same", (None, 5, 5, 3))
    errors.check_kernel_fits("L", (3, 9), "valid", (None, None, 9, 3))  # unknown height passes
    with pytest.raises(
        ValueError,
        match=r"L: argument `kernel_size` expected a window no larger than the input's height x width, 5x8 \(input shape \(None, 5, 8, 3\)\).*received 6",
    ):
        errors.check_kernel_fits("L", 6, "valid", (None, 5, 8, 3))
    with pytest.raises(ValueError, match=r"received \(3, 9\)"):
        errors.check_kernel_fits("L", (3, 9), "valid", (None, 5, 8, 3))
