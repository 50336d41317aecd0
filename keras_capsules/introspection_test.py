"""``all_layers``: every nested layer through public attributes, in the order a reader of the model would list them."""

import keras

from keras_capsules.introspection import all_layers, sublayers


class Block(keras.layers.Layer):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.first = keras.layers.Dense(2, name="first")
        self.pair = [keras.layers.Dense(2, name="second"), keras.layers.Dense(2, name="third")]
        self.again = self.first  # the same layer twice: listed once

    def call(self, x):
        return self.pair[1](self.pair[0](self.first(x)))


def test_all_layers_walks_models_and_attributes_depth_first():
    inputs = keras.Input((3,))
    inner = keras.Sequential([keras.layers.Dense(2, name="inner_dense")], name="inner")
    model = keras.Model(inputs, inner(Block(name="block")(keras.layers.Dense(3, name="stem")(inputs))))
    assert [layer.name for layer in sublayers(model.get_layer("block"))] == ["first", "second", "third"]
    names = [layer.name for layer in all_layers(model)]
    assert names == [model.layers[0].name, "stem", "block", "first", "second", "third", "inner", "inner_dense"]
