"""memory_plan: sizes, the live-tensor replay, the estimate's parts, the largest batch, the refusal, the memory left, the epoch time."""

import dataclasses
import re
import resource
import types

import keras
import numpy as np
import pytest

from keras_capsules import layers
from keras_capsules.training import memory_plan, process_memory

tensorflow_only = pytest.mark.skipif(
    keras.backend.backend() != "tensorflow", reason="the estimate walks a traced TensorFlow graph"
)


# --- parse_size / format_size -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, expected",
    [
        ("8GB", 8_000_000_000),
        ("512MB", 512_000_000),
        ("512MiB", 512 * 2**20),
        ("8GiB", 8 * 2**30),
        ("1.5GB", 1_500_000_000),
        ("8 gb", 8_000_000_000),
        ("2kB", 2000),
        ("2KiB", 2048),
        ("1TB", 10**12),
        ("1024", 1024),
        ("100B", 100),
        (" 3 MiB ", 3 * 2**20),
    ],
)
def test_parse_size_reads_decimal_and_binary_units(text, expected):
    assert memory_plan.parse_size(text) == expected


@pytest.mark.parametrize("text", ["8G", "GB", "-1GB", "8XB", "", "1.2.3GB", 8])
def test_parse_size_refuses_other_text_naming_it(text):
    with pytest.raises(
        ValueError,
        match=r"parse_size: argument `text` expected a size such as '8GB' or '512MiB'.*received "
        + re.escape(repr(text)),
    ):
        memory_plan.parse_size(text)


def test_format_size_uses_decimal_units():
    assert memory_plan.format_size(31_234_000_000) == "31.2 GB"
    assert memory_plan.format_size(512_000_000) == "512 MB"
    assert memory_plan.format_size(900) == "900 B"
    assert memory_plan.format_size(1_500) == "1.5 kB"


# --- the live-tensor replay on hand-made ops ----------------------------------------------------------


class _Tensor:
    """What live_tensors reads of a tensor: name, dtype (name, size), shape (fully defined, iterable)."""

    def __init__(self, name, shape, dtype="float32"):
        self.name, self.shape = name, _Shape(shape)
        self.dtype = types.SimpleNamespace(name=dtype, size={"float32": 4, "float16": 2, "resource": 0}[dtype])


class _Shape(tuple):
    def is_fully_defined(self):
        return None not in self


def _op(name, kind, inputs, *shapes):
    op = types.SimpleNamespace(name=name, type=kind, inputs=list(inputs))
    op.outputs = [_Tensor(f"{name}:{i}", shape) for i, shape in enumerate(shapes)]
    return op


def test_live_tensors_frees_after_the_last_consumer_and_shares_views():
    x = _op("x", "Placeholder", [], (10, 10))  # 400 bytes
    w = _op("w", "ReadVariableOp", [], (10, 10))  # the weights: no buffer
    a = _op("a", "MatMul", [x.outputs[0], w.outputs[0]], (10, 10))  # 400
    v = _op("v", "Reshape", [a.outputs[0]], (100,))  # a view of a
    b = _op("b", "Relu", [v.outputs[0]], (100,))  # 400
    c = _op("c", "Sum", [b.outputs[0]], ())  # 4
    g = _op("g", "MatMul", [x.outputs[0], a.outputs[0]], (10, 10), (5,))  # 400 + 20, x and a freed after it
    result = memory_plan.live_tensors([x, w, a, v, b, c, g], outputs=[g.outputs[0]])
    # Running c: x 400 + a 400 (its view v was read by b, g still reads it) + b 400 + c 4 = 1,204; b and c are
    # then freed. Running g: x 400 + a 400 + g's two outputs 420 = 1,220, the peak.
    assert result.peak_bytes == 400 + 400 + 420
    assert result.at_peak == {"x": 400, "a": 400, "g": 420}
    assert result.ops == 7


def test_live_tensors_count_an_op_made_later_as_its_own_buffer():
    later = _op("later", "EmptyTensorList", [], (25,))  # 100 bytes, made after the op that reads it
    x = _op("x", "Placeholder", [], (25,))  # 100
    loop = _op("loop", "Mul", [x.outputs[0], later.outputs[0]], (25,))  # 100, reads `later` before it runs
    result = memory_plan.live_tensors([x, loop, later], outputs=[loop.outputs[0]])
    assert result.peak_bytes == 200 and result.at_peak == {"x": 100, "loop": 100}  # `later` freed as it is made


@tensorflow_only
def test_live_tensors_add_a_loops_body_once_forward_and_backward():
    """A map over 3 rows whose body tiles its row into a 1000 x 10 temporary (40,000 bytes): the step's
    peak holds one iteration's temporary, not three, and the gradient loop's accumulators (inputs TensorFlow
    adds to the loop after it is made) are read without error."""
    import tensorflow as tf

    weight = tf.Variable(tf.ones((10,)))

    @tf.function
    def step(x):
        with tf.GradientTape() as tape:
            rows = tf.map_fn(
                lambda row: tf.reduce_sum(tf.tile((row * weight)[None], (1000, 1))), x, parallel_iterations=1
            )
            total = tf.reduce_sum(rows)
        return tape.gradient(total, weight)

    graph = step.get_concrete_function(tf.TensorSpec((3, 10))).graph
    result = memory_plan.live_tensors(graph.get_operations(), graph.outputs)
    assert 40_000 <= result.peak_bytes < 2 * 40_000, result


@tensorflow_only
def test_live_tensors_count_what_a_loop_keeps_for_its_gradient():
    """A map over 50 rows of 1,000 floats whose body multiplies its row by a weight and squares it: the
    gradient loop reads each row and each product, which TensorFlow keeps in tensor lists from the
    forward loop to the backward one: 2 x 50 x 4,000 bytes, beside the 200,000-byte input and output."""
    import tensorflow as tf

    weight = tf.Variable(tf.ones((1000,)))

    @tf.function
    def step(x):
        with tf.GradientTape() as tape:
            rows = tf.map_fn(lambda row: tf.square(row * weight), x, parallel_iterations=1)
            total = tf.reduce_sum(rows)
        return tape.gradient(total, weight)

    graph = step.get_concrete_function(tf.TensorSpec((50, 1000))).graph
    result = memory_plan.live_tensors(graph.get_operations(), graph.outputs)
    kept = sum(bytes_ for name, bytes_ in result.at_peak.items() if name.endswith("while"))
    assert kept >= 2 * 50 * 4000, result.at_peak  # the row and the product (and the weight, 50 times)
    assert 4 * 200_000 <= result.peak_bytes < 8 * 200_000, result


@tensorflow_only
def test_live_tensors_count_a_maps_input_and_output_lists():
    """A map over 50 rows of 1,000 floats (200,000 bytes): TensorFlow copies the rows into a list the loop
    reads and fills a list of the results, which are stacked after it; when the stacking runs, the
    results' list (200,000) and the stacked result (200,000) are live at once."""
    import tensorflow as tf

    @tf.function
    def forward(x):
        return tf.map_fn(lambda row: tf.square(row), x, parallel_iterations=1)

    graph = forward.get_concrete_function(tf.TensorSpec((50, 1000))).graph
    result = memory_plan.live_tensors(graph.get_operations(), graph.outputs)
    assert result.peak_bytes >= 2 * 200_000, result
    lists = sum(bytes_ for name, bytes_ in result.at_peak.items() if name.endswith(("while", "TensorListFromTensor")))
    assert lists >= 200_000, result.at_peak


def test_live_tensors_keeps_the_outputs_to_the_end():
    x = _op("x", "Placeholder", [], (25,))  # 100 bytes
    grad = _op("grad", "Mul", [x.outputs[0]], (25,))  # 100, a step output
    out = _op("out", "Identity", [grad.outputs[0]], (25,))  # its view: the function's output
    tail = _op("tail", "Square", [x.outputs[0]], (50,))  # 200
    result = memory_plan.live_tensors([x, grad, out, tail], outputs=[out.outputs[0]])
    # Running tail: x 100 + grad 100 (kept: an output) + tail 200.
    assert result.peak_bytes == 400


# --- the estimate on a model counted by hand ---------------------------------------------------------

N, H, M, BATCH = 64, 256, 32, 512
PARAMETERS = N * H + H + H * M + M  # 24,864


@pytest.fixture(scope="module")
def dense_model():
    inputs = keras.Input((N,))
    hidden = keras.layers.Dense(H, activation="relu", name="hidden")(inputs)
    return keras.Model(inputs, keras.layers.Dense(M, name="out")(hidden), name="dense_pair")


@tensorflow_only
def test_step_peak_of_two_dense_layers_is_counted_by_hand(dense_model):
    plan = memory_plan.estimate(dense_model, BATCH, optimizer="adam")
    # The step's peak is the hidden layer's ReLU gradient: alive then are the input x (b*n, the first
    # layer's kernel gradient reads it), the ReLU output (b*h, ReluGrad reads it), the gradient reaching
    # it (b*h), the ReluGrad output (b*h), and the finished output-layer gradients (h*m + m). float32.
    by_hand = 4 * (BATCH * N + 3 * BATCH * H + H * M + M)
    assert plan.step_live_bytes == by_hand == 1_736_832
    assert plan.activation_bytes == round(memory_plan.LIVE_FACTOR * by_hand)
    assert plan.votes_bytes == 0  # no routed layer


@tensorflow_only
@pytest.mark.parametrize(
    "optimizer, slots",
    [("adam", 2), (keras.optimizers.SGD(momentum=0.9), 1), ("sgd", 0), (keras.optimizers.AdamW(), 2)],
)
def test_weights_and_optimizer_state_by_hand(dense_model, optimizer, slots):
    plan = memory_plan.estimate(dense_model, 8, optimizer=optimizer)
    assert plan.parameters == PARAMETERS
    assert plan.weights_bytes == 4 * PARAMETERS
    assert plan.optimizer_bytes == slots * 4 * PARAMETERS
    assert plan.graph_bytes == round(memory_plan.BYTES_PER_OP * plan.step_ops)
    assert plan.baseline_bytes == memory_plan.PROCESS_BASELINE_BYTES
    parts = plan.baseline_bytes + 4 * PARAMETERS * (1 + slots) + plan.graph_bytes + plan.activation_bytes
    assert plan.peak_bytes == parts


@tensorflow_only
def test_a_compiled_model_is_traced_with_its_loss_and_optimizer(dense_model):
    model = keras.models.clone_model(dense_model)
    model.compile(
        optimizer=keras.optimizers.SGD(momentum=0.9), loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    )
    plan = memory_plan.estimate(model, 4, examples=10)
    assert plan.optimizer == "SGD" and plan.optimizer_bytes == 4 * PARAMETERS  # momentum: one slot
    assert plan.steps_per_epoch == 3  # ceil(10 / 4)
    assert plan.input_shape == (N,) and plan.batch_size == 4


@tensorflow_only
def test_votes_of_a_routed_layer_are_attributed():
    batch, in_caps, out_caps, dim = 32, 64, 10, 16
    inputs = keras.Input((in_caps, 8))
    poses, _ = layers.FcCaps(out_caps, dim, router="dynamic", routing_iterations=3, name="class_caps")(inputs)
    model = keras.Model(inputs, poses, name="fc_caps_only")
    plan = memory_plan.estimate(model, batch)
    # Every routing iteration reads the votes (b, in, out, dim); the backward pass keeps them: they are live at the peak.
    votes = 4 * batch * in_caps * out_caps * dim
    assert memory_plan.LIVE_FACTOR * votes <= plan.votes_bytes <= plan.activation_bytes
    # The trace wrapped the layer's and its router's methods in a name scope, and unwrapped them.
    caps = model.get_layer("class_caps")
    assert not {"call", "vote_and_route"} & set(vars(caps)) and "call" not in vars(caps.router)


def test_the_estimate_is_tensorflow_only(monkeypatch, dense_model):
    monkeypatch.setattr(keras.backend, "backend", lambda: "jax")
    with pytest.raises(
        ValueError, match=r"memory_plan.estimate: argument `model` expected a model of the TensorFlow backend.*'jax'"
    ):
        memory_plan.estimate(dense_model, 8)


# --- the largest batch and the refusal ---------------------------------------------------------------


def _linear_plan(batch, fixed=1_000, per_example=100, offset=0, calls=None):
    """A hand-made plan: peak = fixed + offset + batch * per_example (``offset``: activations that do not grow with the
    batch, such as gradients); its ``reestimate`` appends each batch asked for to ``calls``."""
    activations = offset + batch * per_example

    def reestimate(other):
        if calls is not None:
            calls.append(other)
        return _linear_plan(other, fixed, per_example, offset, calls)

    return memory_plan.TrainingPlan(
        model_name="toy",
        input_shape=(64, 64, 3),
        batch_size=batch,
        optimizer="Adam",
        parameters=10,
        weights_bytes=100,
        optimizer_bytes=200,
        graph_bytes=300,
        activation_bytes=activations,
        votes_bytes=activations // 2,
        baseline_bytes=fixed - 600,
        step_live_bytes=activations,
        step_ops=3,
        reestimate=reestimate,
    )


def test_largest_batch_on_a_linear_plan_is_verified_once():
    calls = []
    plan = _linear_plan(16, calls=calls)  # 1,000 + 16 * 100 = 2,600 bytes
    # (2,000 - 1,000) / 100 = 10 examples fit; 11 would take 2,100.
    found = memory_plan.largest_batch(plan, 2_000)
    assert found.batch_size == 10 and found.peak_bytes == 2_000
    assert calls == [10]


def test_largest_batch_of_an_affine_plan_takes_two_estimates():
    calls = []
    plan = _linear_plan(16, offset=500, calls=calls)  # peak(b) = 1,500 + 100 b: 3,100 at 16
    # By hand: 1,500 + 100 b <= 2,500 -> b = 10. The line through plan and its fixed 1,000 bytes has slope
    # 2,100 / 16 = 131.25 and guesses 11 (2,600: over); the line through 11 and 16 is exact: 10.
    found = memory_plan.largest_batch(plan, 2_500)
    assert found.batch_size == 10 and found.peak_bytes == 2_500
    assert calls == [11, 10]


def test_largest_batch_is_none_when_not_even_one_fits():
    assert memory_plan.largest_batch(_linear_plan(16), 1_050) is None  # batch 1: 1,100
    calls = []
    assert memory_plan.largest_batch(_linear_plan(16, offset=500, calls=calls), 1_550) is None  # batch 1: 1,600
    assert calls == [4]  # 4 is over; the exact line through 4 and 16 then names no batch >= 1


def test_check_names_model_input_batch_estimate_limit_and_largest_batch():
    plan = _linear_plan(16, fixed=2 * 10**9, per_example=10**9)  # 18 GB at batch 16
    with pytest.raises(memory_plan.MemoryPlanError) as caught:
        memory_plan.check(plan, memory_plan.parse_size("8GB"))
    message = str(caught.value)
    assert isinstance(caught.value, ValueError)
    assert "model 'toy' on 64x64x3 inputs at batch 16 needs about 18 GB" in message
    assert "capsule votes 8 GB" in message and "process baseline 2 GB" in message
    assert "more than the limit of 8 GB" in message
    assert "The largest batch that fits is 6 (about 8 GB)" in message  # (8 - 2) / 1 GB per example


def test_check_says_when_no_batch_fits():
    with pytest.raises(
        memory_plan.MemoryPlanError,
        match=r"No batch fits, not even 1 \(the parts that do not grow with the batch take 1 kB\)",
    ):
        memory_plan.check(_linear_plan(4), 900)


def test_check_returns_a_plan_that_fits():
    plan = _linear_plan(4)
    assert memory_plan.check(plan, 1_400) is plan


def test_plan_fastest_drops_recomputation_only_with_room_to_spare(monkeypatch):
    asked = []

    def make_plan(recompute):  # with: 1,000 + 16 x 100 = 2,600 bytes; without: 1,000 + 16 x 400 = 7,400
        asked.append(recompute)
        return dataclasses.replace(_linear_plan(16, per_example=100 if recompute else 400), recompute=recompute)

    # 7,400 <= 0.75 x 10,000 = 7,500: without, and the plan with recomputation is never made.
    assert memory_plan.plan_fastest(make_plan, 10_000).recompute is False and asked == [False]
    asked.clear()  # 7,400 > 0.75 x 9,000 = 6,750: with (2,600 fits).
    assert memory_plan.plan_fastest(make_plan, 9_000).recompute is True and asked == [False, True]
    with pytest.raises(memory_plan.MemoryPlanError, match="needs about 2.6 kB"):  # neither fits 2,000
        memory_plan.plan_fastest(make_plan, 2_000)
    asked.clear()  # no limit known: with, without making the other plan
    monkeypatch.setattr(memory_plan, "available_bytes", lambda: None)
    assert memory_plan.plan_fastest(make_plan).recompute is True and asked == [True]
    monkeypatch.setattr(memory_plan, "available_bytes", lambda: 10_000)  # the default limit
    assert memory_plan.plan_fastest(make_plan).recompute is False


@tensorflow_only
def test_a_step_traced_without_recomputation_keeps_a_convolutional_layers_votes():
    batch, grid, types, dim, parents, out_dim = 4, 10, 2, 4, 3, 8
    inputs = keras.Input((grid, grid, types, dim))
    poses, _ = layers.ConvCaps(parents, out_dim, kernel_size=3, router="dynamic", name="conv")(inputs)
    model = keras.Model(inputs, poses)
    with_remat, without = (memory_plan.estimate(model, batch, recompute=flag) for flag in (True, False))
    assert with_remat.recompute and not without.recompute
    # Without recomputation the whole vote tensor, (batch x 8 x 8 positions, 3 x 3 x 2 children, 3 parents, 8)
    # float32 = 442,368 bytes, stays live for the backward pass; with it the layer routes and recomputes one output
    # row (an eighth of them) at a time.
    votes, row = 4 * batch * 64 * 18 * parents * out_dim, 4 * batch * 8 * 18 * parents * out_dim
    assert without.step_live_bytes - with_remat.step_live_bytes >= votes - row
    assert "rematerialisation: off" in without.describe() and "rematerialisation" not in with_remat.describe()


def test_describe_lists_the_parts():
    text = dataclasses.replace(_linear_plan(4), steps_per_epoch=1234).describe()
    assert text.splitlines()[0] == "Training plan: model 'toy' on 64x64x3 inputs at batch 4, Adam"
    assert (
        "estimated peak memory: 1.4 kB (process baseline 400 B, weights 100 B, optimizer state 200 B, step graph 300 B"
        in text
    )
    assert "steps per epoch: 1,234" in text


# --- the memory this process can use -----------------------------------------------------------------

GIB = 2**30


def _fake_proc(tmp_path, monkeypatch, meminfo_available, cgroup_lines, rss=GIB, vm_size=3 * GIB):
    (tmp_path / "meminfo").write_text(f"MemTotal:       25000000 kB\nMemAvailable:   {meminfo_available // 1024} kB\n")
    (tmp_path / "status").write_text(
        f"Name:\tpython\nVmSize:\t{vm_size // 1024} kB\nVmHWM:\t{rss // 1024} kB\nVmRSS:\t{rss // 1024} kB\n"
    )
    (tmp_path / "cgroup").write_text("".join(line + "\n" for line in cgroup_lines))
    monkeypatch.setattr(process_memory, "PROC_MEMINFO", str(tmp_path / "meminfo"))
    monkeypatch.setattr(process_memory, "PROC_STATUS", str(tmp_path / "status"))
    monkeypatch.setattr(process_memory, "PROC_CGROUP", str(tmp_path / "cgroup"))
    monkeypatch.setattr(process_memory, "CGROUP_ROOT", str(tmp_path / "sys"))
    monkeypatch.setattr(resource, "getrlimit", lambda which: (resource.RLIM_INFINITY, resource.RLIM_INFINITY))


def _group(root, path, files):
    folder = root.joinpath(*path.strip("/").split("/")) if path.strip("/") else root
    folder.mkdir(parents=True, exist_ok=True)
    for name, value in files.items():
        (folder / name).write_text(f"{value}\n")


def test_available_bytes_without_cgroup_limits_is_resident_plus_mem_available(tmp_path, monkeypatch):
    _fake_proc(tmp_path, monkeypatch, 20 * GIB, ["0::/"])
    _group(tmp_path / "sys", "/", {"memory.max": "max", "memory.current": 5 * GIB})
    assert memory_plan.resident_bytes() == GIB
    assert memory_plan.available_bytes() == GIB + 20 * GIB


def test_available_bytes_reads_the_cgroup_v2_limit_of_the_group_and_its_parents(tmp_path, monkeypatch):
    _fake_proc(tmp_path, monkeypatch, 20 * GIB, ["0::/jobs/trainer"])
    _group(tmp_path / "sys", "/jobs", {"memory.max": 12 * GIB, "memory.current": 10 * GIB})  # 2 GiB left: the least
    _group(tmp_path / "sys", "/jobs/trainer", {"memory.max": 8 * GIB, "memory.current": 3 * GIB})  # 5 GiB left
    assert memory_plan.available_bytes() == GIB + 2 * GIB


def test_available_bytes_reads_the_cgroup_v1_memory_controller(tmp_path, monkeypatch):
    _fake_proc(tmp_path, monkeypatch, 20 * GIB, ["5:cpu,cpuacct:/x", "4:memory:/docker/abc"])
    _group(
        tmp_path / "sys" / "memory", "/docker/abc", {"memory.limit_in_bytes": 6 * GIB, "memory.usage_in_bytes": 2 * GIB}
    )
    _group(
        tmp_path / "sys" / "memory",
        "/",
        {"memory.limit_in_bytes": 9223372036854771712, "memory.usage_in_bytes": 9 * GIB},
    )  # no limit
    assert memory_plan.available_bytes() == GIB + 4 * GIB


def test_available_bytes_counts_rlimit_as_against_the_address_space_in_use(tmp_path, monkeypatch):
    _fake_proc(tmp_path, monkeypatch, 20 * GIB, [], vm_size=3 * GIB)
    monkeypatch.setattr(resource, "getrlimit", lambda which: (5 * GIB, resource.RLIM_INFINITY))
    assert memory_plan.available_bytes() == GIB + 2 * GIB  # 5 GiB of address space, 3 in use


def test_available_bytes_without_proc_falls_back_to_sysconf_or_none(tmp_path, monkeypatch):
    _fake_proc(tmp_path, monkeypatch, 0, [])
    monkeypatch.setattr(process_memory, "PROC_MEMINFO", str(tmp_path / "absent"))
    monkeypatch.setattr(process_memory, "PROC_STATUS", str(tmp_path / "absent"))
    pages = {"SC_AVPHYS_PAGES": 1000, "SC_PAGE_SIZE": 4096}
    monkeypatch.setattr(process_memory.os, "sysconf", lambda name: pages[name])
    assert memory_plan.available_bytes() == 4096 * 1000

    def unsupported(name):
        raise ValueError(name)

    monkeypatch.setattr(process_memory.os, "sysconf", unsupported)
    assert memory_plan.available_bytes() is None


def test_check_uses_available_bytes_by_default(tmp_path, monkeypatch):
    _fake_proc(tmp_path, monkeypatch, 4 * GIB, [], rss=GIB)
    with pytest.raises(memory_plan.MemoryPlanError, match=r"more than the 5.37 GB this process can use"):
        memory_plan.check(_linear_plan(16, fixed=2 * 10**9, per_example=10**9))


# --- the epoch's time --------------------------------------------------------------------------------


def test_epoch_time_estimate_times_the_steady_steps():
    clock = iter([10.0, 12.0, 13.0, 13.5, 14.0, 14.5, 15.5, 99.0])  # the ends of steps 1-8
    printed = []
    callback = memory_plan.EpochTimeEstimate(warmup=3, steps=4, print_fn=printed.append, clock=lambda: next(clock))
    callback.set_params({"steps": 1200, "epochs": 1})
    callback.on_epoch_begin(0)
    for step in range(8):
        callback.on_train_batch_end(step)
    # Steps 4-7 ran from 13.0 to 15.5: 0.625 s each; 1,200 steps -> 750 s.
    assert callback.step_seconds == pytest.approx(0.625)
    assert callback.epoch_seconds == pytest.approx(750.0)
    assert printed == ["Estimated epoch time: 12 min 30 s (mean step 0.625 s over steps 4-7, 1,200 steps per epoch)"]


def test_epoch_time_estimate_with_unknown_steps_prints_the_step_time():
    clock = iter(np.arange(10.0))
    printed = []
    callback = memory_plan.EpochTimeEstimate(
        warmup=1, steps=2, print_fn=printed.append, clock=lambda: float(next(clock))
    )
    callback.set_params({"steps": None})
    for step in range(3):
        callback.on_train_batch_end(step)
    assert callback.epoch_seconds is None
    assert printed == ["Estimated step time: 1 s (mean step 1 s over steps 2-3; steps per epoch unknown)"]


def test_epoch_time_estimate_refuses_bad_arguments():
    with pytest.raises(ValueError, match=r"EpochTimeEstimate.*argument `warmup` expected an integer >= 1, received 0"):
        memory_plan.EpochTimeEstimate(warmup=0)


@tensorflow_only
def test_estimate_of_a_layer_that_routes_its_rows_in_a_loop():
    """ConvCaps in training routes one output row at a time in a loop: the plan reads the loop (its body's
    votes among the routed bytes) instead of failing on the gradient loop's accumulators."""
    inputs = keras.Input((7, 7, 3, 4))
    poses, _ = layers.ConvCaps(4, 4, kernel_size=3, router="dynamic")(inputs)
    model = keras.Model(inputs, keras.layers.Flatten()(poses))
    plan = memory_plan.estimate(model, 8)
    row_votes = (
        8 * 5 * (9 * 3) * 4 * 4 * 4
    )  # one of the 5 output rows: batch x 5 positions x 27 children x 4 parents x 4 x float32
    assert plan.votes_bytes >= row_votes and plan.step_ops > 0


def test_routers_that_compile_are_planned_as_their_plain_graph():
    """An XLA cluster would be one op to the replay: the plan traces compiling routers plain, temporaries counted."""
    from keras_capsules.routing import KernelRouter

    batch, in_caps, out_caps, dim = 16, 32, 10, 16

    def plan(jit_compile):
        inputs = keras.Input((in_caps, 8))
        router = KernelRouter(num_components=4, jit_compile=jit_compile)
        poses, _ = layers.FcCaps(out_caps, dim, router=router)(inputs)
        return memory_plan.estimate(keras.Model(inputs, poses), batch)

    compiled, plain = plan(True), plan(False)
    assert (compiled.step_live_bytes, compiled.step_ops) == (plain.step_live_bytes, plain.step_ops)
    # Inside the router the pose differences tau (batch, out, in, dim) live beside the votes of that size.
    votes = 4 * batch * in_caps * out_caps * dim
    assert compiled.step_live_bytes >= 2 * votes
