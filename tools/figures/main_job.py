"""The main job's figures (README, results, getting started, EffCapsNet and applications pages)."""

from figures import records
from figures.numbers import TEST_IMAGES, percent
from keras_capsules import markdown


def _main_job_facts(link_prefix):
    record, path = records.main_job_record()
    return record, {
        "accuracy": percent(record["test_accuracy"]),
        "train": f"{record['train_seconds']:.0f} s",
        "command": f"{record['command_seconds']:.0f} s",
        "host": f"a {record['host']['cores']}-core {record['host']['cpu']} CPU",
        "link": f"{link_prefix}{path}",
        "date": record["date"],
    }


def main_job_readme():
    _, facts = _main_job_facts("docs/results/")
    return (
        "**Main job** — install, then train Efficient-CapsNet on the MNIST sample that ships inside the package\n"
        "(progress bar, final test accuracy; no network needed beyond `pip`). In its "
        f"[recorded run]({facts['link']}) ({facts['date']}, {facts['host']} shared with other work) the training command printed "
        f"{facts['accuracy']} test accuracy after {facts['command']}, {facts['train']} of it training, the install not included:"
    )


def main_job_results():
    record, facts = _main_job_facts("results/")
    validation = ", ".join(f"{100 * value:.2f}" for value in record["validation_accuracy"])
    software = record["software"]
    load = record["host"]["load_average_1min"]
    return (
        f"`{record['command']}` (the paper recipe: Adam 5e-4, batch {record['batch_size']}, margin loss + 0.392 × MSE\n"
        f"reconstruction, Efficient-CapsNet's MNIST augmentation; {record['parameters']:,} parameters with the decoder) on\n"
        f"the sample's training images less the validation hold-out ({record['training_examples']:,} images, "
        f"{record['validation_examples']:,} held out; {record['steps_per_epoch']} steps per epoch):\n"
        f"**{facts['accuracy']} test accuracy on the {TEST_IMAGES[record['dataset']]:,} test images after the README's "
        f"{record['epochs']} epochs** (validation accuracy after each epoch: {validation} %; one run, one seed).\n"
        f"The command took {facts['command']} from start to exit, {facts['train']} of it training, on {facts['host']} "
        f"shared with other work (1-minute load average {load['start']} at the start), from a clean export of commit "
        f"`{record['commit'][:7]}` on {record['date']} (TensorFlow {software['tensorflow']}, Keras {software['keras']}); "
        f"the install is not included. [Run record]({facts['link']}), written by "
        "`python tools/results/main_job.py`."
    )


def main_job_getting_started():
    _, facts = _main_job_facts("results/")
    return (
        f"In its [recorded run]({facts['link']}) ({facts['date']}, {facts['host']} shared with other work) it printed "
        f"{facts['accuracy']} test accuracy after {facts['train']} of training ({facts['command']} for the whole command); "
        "[Measured results](results.md#the-main-job-efficient-capsnet-on-the-embedded-mnist-sample) has the details."
    )


def main_job_eff_capsnet():
    record, facts = _main_job_facts("../results/")
    return (
        "**Measured (the main job).** `keras-capsules train EffCapsNet --epochs 3` on the MNIST sample embedded in the\n"
        f"package ({record['training_examples']:,} real MNIST images for training after the {record['validation_examples']:,}-image "
        f"validation hold-out, {TEST_IMAGES[record['dataset']]:,} for test), the paper recipe (Adam 5e-4 ×0.97\n"
        f"per epoch, batch {record['batch_size']}, margin loss + 0.392 × MSE reconstruction, Efficient-CapsNet's MNIST\n"
        f"augmentation), **{record['epochs']} epochs ({record['steps_per_epoch']} steps each): {facts['accuracy']} test accuracy**, "
        f"in its [recorded run]({facts['link']}) on {facts['host']}."
    )


def main_job_applications():
    record, facts = _main_job_facts("../results/")
    setting = (
        "the main job: `keras-capsules train EffCapsNet --epochs 3`, "
        f"{record['epochs']} epochs ({record['steps_per_epoch']} steps of batch {record['batch_size']}) on the embedded MNIST sample, "
        f"{TEST_IMAGES[record['dataset']]:,} test images ([run record]({facts['link']}))"
    )
    return "\n".join(
        markdown.table(
            ["model", "measured", "setting"], [["[EffCapsNet](eff_capsnet.md)", f"**{facts['accuracy']}**", setting]]
        )
    )
