"""keras_capsules.markdown: tables and marked blocks, against hand-written Markdown."""

import pytest

from keras_capsules import markdown


def test_table_aligns_columns_and_writes_empty_cells_as_one_space():
    lines = markdown.table(["", "model", "accuracy (%)"], [["none", "EffCapsNet", 99.1], ["a", "", "—"]], align="llr")
    assert lines == [
        "| | model | accuracy (%) |",
        "|---|---|---:|",
        "| none | EffCapsNet | 99.1 |",
        "| a | | — |",
    ]


def test_table_defaults_to_left_aligned_and_takes_no_rows():
    assert markdown.table(["a", "b"], []) == ["| a | b |", "|---|---|"]


def test_table_refuses_a_row_of_the_wrong_length():
    with pytest.raises(ValueError, match=r"row 1 holds 1 cells, expected 2 .*received \['x'\]"):
        markdown.table(["a", "b"], [["1", "2"], ["x"]])


@pytest.mark.parametrize("align", ["l", "lc", "lrr"])
def test_table_refuses_an_alignment_that_does_not_fit(align):
    with pytest.raises(ValueError, match=f"align must give one of \\['l', 'r'\\] per column .*received '{align}'"):
        markdown.table(["a", "b"], [], align=align)


def test_markers_and_block():
    assert markdown.markers("figures:rem-preset") == (
        "<!-- figures:rem-preset:start -->",
        "<!-- figures:rem-preset:end -->",
    )
    assert markdown.block("presets", "body") == "<!-- presets:start -->\nbody\n<!-- presets:end -->"
    assert markdown.block("x", "body", separator="\n\n") == "<!-- x:start -->\n\nbody\n\n<!-- x:end -->"


def test_replace_block_keeps_the_rest_of_the_page():
    page = "# Title\n\n<!-- x:start -->\nold\nlines\n<!-- x:end -->\n\nAfter.\n"
    assert (
        markdown.replace_block(page, "x", "new", "p.md")
        == "# Title\n\n<!-- x:start -->\nnew\n<!-- x:end -->\n\nAfter.\n"
    )
    assert (
        markdown.replace_block(page, "x", "new", "p.md", separator="\n\n")
        == "# Title\n\n<!-- x:start -->\n\nnew\n\n<!-- x:end -->\n\nAfter.\n"
    )


def test_replace_block_leaves_other_blocks_alone():
    page = "<!-- a:start -->\n1\n<!-- a:end -->\n<!-- b:start -->\n2\n<!-- b:end -->"
    assert markdown.replace_block(page, "b", "3", "p.md") == (
        "<!-- a:start -->\n1\n<!-- a:end -->\n<!-- b:start -->\n3\n<!-- b:end -->"
    )


def test_replace_block_appends_a_missing_block_when_asked():
    assert markdown.replace_block("# Title\n\n", "presets", "table", "p.md", append=True) == (
        "# Title\n\n<!-- presets:start -->\ntable\n<!-- presets:end -->\n"
    )


@pytest.mark.parametrize(
    "page, found",
    [
        ("no markers", "the start marker 0 time(s) and the end marker 0 time(s)"),
        ("<!-- x:start --> <!-- x:start --> <!-- x:end -->", "the start marker 2 time(s) and the end marker 1 time(s)"),
        ("<!-- x:start -->", "the start marker 1 time(s) and the end marker 0 time(s)"),
        ("<!-- x:end --> <!-- x:start -->", "the start marker 1 time(s) and the end marker 1 time(s), the end first"),
    ],
)
def test_replace_block_names_the_page_when_its_markers_are_wrong(page, found):
    expected = f"docs/x.md must hold <!-- x:start --> ... <!-- x:end --> once each, in that order; it holds {found}"
    with pytest.raises(ValueError) as error:
        markdown.replace_block(page, "x", "body", "docs/x.md")
    assert str(error.value) == expected
    if "<!--" in page:  # appending is for a page with neither marker only
        with pytest.raises(ValueError):
            markdown.replace_block(page, "x", "body", "docs/x.md", append=True)
