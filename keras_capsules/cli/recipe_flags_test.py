"""``train``'s recipe flags cover every Recipe field, with its type."""

from keras_capsules.cli.recipe_flags import OPTIONAL_RECIPE_FLAGS, RECIPE_FIELDS_WITHOUT_FLAG, RECIPE_FLAGS


def test_recipe_flags_cover_every_recipe_field_with_its_type():
    import dataclasses
    import typing

    from keras_capsules.recipes import Recipe

    hints = typing.get_type_hints(Recipe)
    fields = {field.name for field in dataclasses.fields(Recipe)}
    assert set(RECIPE_FLAGS) | set(RECIPE_FIELDS_WITHOUT_FLAG) == fields  # a new field needs a flag or a reason
    assert not set(RECIPE_FLAGS) & set(RECIPE_FIELDS_WITHOUT_FLAG)
    for field, (kind, _, _) in RECIPE_FLAGS.items():
        declared = [t for t in typing.get_args(hints[field]) if t is not type(None)] or [hints[field]]
        assert (tuple if getattr(kind, "__origin__", None) is tuple else kind) is declared[0], field
        assert (type(None) in typing.get_args(hints[field])) == (field in OPTIONAL_RECIPE_FLAGS), (
            field
        )  # 'none' accepted
